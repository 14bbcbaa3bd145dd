//! Argument checks shared by every environment, wrapper and vector environment.

use emberlab_core::{Action, Error, Result, Space};

/// The index of a discrete `action`, or [`Error::InvalidAction`] naming the action and
/// `space` if it is continuous or out of range.
pub(crate) fn discrete_action(action: Action<'_>, space: &Space) -> Result<usize> {
    match (action, space) {
        (Action::Discrete(a), Space::Discrete(d)) if d.contains(a) => Ok(a),
        _ => Err(invalid_action(action, space)),
    }
}

/// The values of a continuous `action` (right length, no NaN; bounds are not checked), or
/// [`Error::InvalidAction`] naming the action and `space`.
pub(crate) fn continuous_action<'a>(action: Action<'a>, space: &Space) -> Result<&'a [f32]> {
    match (action, space) {
        (Action::Continuous(x), Space::Box(b)) => b.check_action(x).map(|()| x),
        _ => Err(invalid_action(action, space)),
    }
}

/// [`Error::InvalidAction`] for `action` in `space`.
pub(crate) fn invalid_action(action: Action<'_>, space: &Space) -> Error {
    Error::InvalidAction {
        action: format!("{action:?}"),
        space: space.to_string(),
    }
}

/// Checks that an observation buffer has the length of `space`.
pub(crate) fn obs_len(obs: &[f32], space: &Space) -> Result<()> {
    Error::check_len("observation buffer", space.flat_dim(), obs.len())
}

/// The error for stepping an environment that has not been reset (Gymnasium's
/// `ResetNeeded`).
pub(crate) fn reset_needed(id: &str) -> Error {
    Error::invalid(
        format!("call to {id}.step"),
        "before the first reset",
        "reset_into (or set_state) before step_into",
    )
}

/// Checks a state given to `set_state`: length `dim`, every value finite.
pub(crate) fn state_values(id: &str, state: &[f64], dim: usize) -> Result<()> {
    Error::check_len(&format!("{id} state"), dim, state.len())?;
    for (i, &v) in state.iter().enumerate() {
        Error::check_finite(|| format!("{id} state[{i}]"), v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_core::{BoxSpace, Discrete};

    #[test]
    fn discrete_actions_are_checked() {
        let space = Space::Discrete(Discrete::new(2).unwrap());
        assert_eq!(discrete_action(Action::Discrete(1), &space).unwrap(), 1);
        let e = discrete_action(Action::Discrete(2), &space)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Discrete(2)") && e.contains("Discrete(2)"),
            "{e}"
        );
        assert!(discrete_action(Action::Continuous(&[0.0]), &space).is_err());
    }

    #[test]
    fn continuous_actions_are_checked() {
        let space = Space::Box(BoxSpace::uniform(1, -2.0, 2.0).unwrap());
        assert_eq!(
            continuous_action(Action::Continuous(&[5.0]), &space).unwrap(),
            &[5.0]
        );
        let e = continuous_action(Action::Continuous(&[f32::NAN]), &space).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
        assert!(continuous_action(Action::Continuous(&[0.0, 1.0]), &space).is_err());
        assert!(continuous_action(Action::Discrete(0), &space).is_err());
    }

    #[test]
    fn states_are_checked() {
        assert!(state_values("X", &[0.0, 1.0], 2).is_ok());
        assert!(state_values("X", &[0.0], 2).is_err());
        let e = state_values("X", &[0.0, f64::NAN], 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("X state[1]"), "{e}");
    }
}
