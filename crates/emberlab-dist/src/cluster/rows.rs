//! How a transition travels as one row of floats between an actor and a learner.

use crate::grpc::BatchRules;
use emberlab_core::{Error, Result, Space, Transition};

/// The row layout of transitions on the wire and in the log:
/// `[obs (obs_dim), action (act_dim), reward, next_obs (obs_dim), terminated, truncated]`,
/// flags as `0.0` / `1.0`; a discrete action is its index as one float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionRows {
    /// Observation width.
    pub obs_dim: usize,
    /// Stored action width (1 for a discrete action).
    pub act_dim: usize,
}

impl TransitionRows {
    /// Values per row.
    pub fn width(&self) -> usize {
        2 * self.obs_dim + self.act_dim + 3
    }

    /// Appends `t` as one row to `out`.
    ///
    /// # Errors
    /// An observation or action of another width than the layout's.
    pub fn push(&self, t: &Transition<'_>, out: &mut Vec<f32>) -> Result<()> {
        Error::check_len("transition observation width", t.obs.len(), self.obs_dim)?;
        Error::check_len(
            "transition next observation width",
            t.next_obs.len(),
            self.obs_dim,
        )?;
        Error::check_len("transition action width", t.action.len(), self.act_dim)?;
        out.extend_from_slice(t.obs);
        out.extend_from_slice(t.action);
        out.push(t.reward);
        out.extend_from_slice(t.next_obs);
        out.push(f32::from(u8::from(t.terminated)));
        out.push(f32::from(u8::from(t.truncated)));
        Ok(())
    }

    /// The transitions of `values` (whole rows of [`Self::width`] values).
    ///
    /// # Errors
    /// `values` not whole rows, or a flag other than 0 or 1.
    pub fn rows<'a>(
        &self,
        values: &'a [f32],
    ) -> Result<impl Iterator<Item = Transition<'a>> + use<'a>> {
        let (w, o, a) = (self.width(), self.obs_dim, self.act_dim);
        if !values.len().is_multiple_of(w) {
            return Err(Error::invalid(
                "transition values",
                values.len(),
                format!("whole rows of {w}"),
            ));
        }
        for row in values.chunks_exact(w) {
            for &flag in &row[w - 2..] {
                if flag != 0.0 && flag != 1.0 {
                    return Err(Error::invalid("transition flag", flag, "0 or 1"));
                }
            }
        }
        Ok(values.chunks_exact(w).map(move |row| Transition {
            obs: &row[..o],
            action: &row[o..o + a],
            reward: row[o + a],
            next_obs: &row[o + a + 1..2 * o + a + 1],
            terminated: row[w - 2] == 1.0,
            truncated: row[w - 1] == 1.0,
        }))
    }
}

/// The largest magnitude an observation, continuous action or reward may have by default
/// ([`RowRules::max_abs`]): far beyond any Gymnasium or MuJoCo task's values, far below
/// what overflows a network's arithmetic.
pub const DEFAULT_MAX_ABS: f32 = 1e6;

/// What a learner takes as a transition row, checked at the door (every batch, before
/// anything of it is stored) and again before training on a logged record: flags exactly
/// 0 or 1, a discrete action an integer of the action space, every other value finite and
/// at most [`RowRules::max_abs`] in magnitude.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowRules {
    /// The row layout.
    pub layout: TransitionRows,
    /// `Some(n)`: actions are indices `0..n` (a `Discrete(n)` space); `None`: continuous.
    pub discrete: Option<usize>,
    /// The largest magnitude of an observation, continuous action or reward value.
    pub max_abs: f32,
}

impl RowRules {
    /// Rules for rows of `layout` acting in `action_space`, values bounded by `max_abs`.
    ///
    /// # Errors
    /// `max_abs` not a positive number; an action space whose stored width is not the
    /// layout's.
    pub fn new(layout: TransitionRows, action_space: &Space, max_abs: f32) -> Result<Self> {
        if max_abs.is_nan() || max_abs <= 0.0 {
            return Err(Error::invalid(
                "largest transition value magnitude",
                max_abs,
                "a positive number",
            ));
        }
        Error::check_len(
            "transition action width",
            layout.act_dim,
            emberlab_algo::stored_action_dim(action_space),
        )?;
        let discrete = match action_space {
            Space::Discrete(d) => Some(d.n()),
            Space::Box(_) => None,
        };
        Ok(RowRules {
            layout,
            discrete,
            max_abs,
        })
    }

    /// The name of value `i` of a row.
    fn field(&self, i: usize) -> String {
        let (o, a, w) = (
            self.layout.obs_dim,
            self.layout.act_dim,
            self.layout.width(),
        );
        match i {
            i if i < o => format!("observation[{i}]"),
            i if i < o + a && a == 1 => "action".into(),
            i if i < o + a => format!("action[{}]", i - o),
            i if i == o + a => "reward".into(),
            i if i < w - 2 => format!("next observation[{}]", i - o - a - 1),
            i if i == w - 2 => "terminated".into(),
            _ => "truncated".into(),
        }
    }
}

impl BatchRules for RowRules {
    fn check(&self, values: &[f32]) -> Result<()> {
        let (o, w) = (self.layout.obs_dim, self.layout.width());
        if !values.len().is_multiple_of(w) {
            return Err(Error::invalid(
                "transition values",
                values.len(),
                format!("whole rows of {w}"),
            ));
        }
        let bad = |row: usize, i: usize, v: f32, expected: String| {
            Err(Error::invalid(
                format!("row {row} {}", self.field(i)),
                v,
                expected,
            ))
        };
        for (r, row) in values.chunks_exact(w).enumerate() {
            for (i, &v) in row.iter().enumerate() {
                let flag = i >= w - 2;
                let action = (o..o + self.layout.act_dim).contains(&i);
                if flag {
                    if v != 0.0 && v != 1.0 {
                        return bad(r, i, v, "0 or 1".into());
                    }
                } else if action && let Some(n) = self.discrete {
                    if !(v >= 0.0 && v < n as f32 && v.fract() == 0.0) {
                        return bad(r, i, v, format!("an action index of Discrete({n}), 0..{n}"));
                    }
                } else if v.is_nan() || v.abs() > self.max_abs {
                    return bad(
                        r,
                        i,
                        v,
                        format!("a finite value of magnitude at most {:e}", self.max_abs),
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_the_row_and_field_that_break_them() {
        let layout = TransitionRows {
            obs_dim: 2,
            act_dim: 1,
        };
        let discrete = Space::Discrete(emberlab_core::Discrete::new(2).unwrap());
        let rules = RowRules::new(layout, &discrete, 1e3).unwrap();
        let good = [0.5, -0.5, 1.0, 1.0, 0.1, 0.2, 0.0, 1.0];
        assert!(rules.check(&good).is_ok());
        let broken = |i: usize, v: f32| {
            let mut rows = [good, good].concat();
            rows[layout.width() + i] = v;
            rules.check(&rows).unwrap_err().to_string()
        };
        assert_eq!(
            broken(6, 0.5),
            "invalid row 1 terminated: got 0.5, expected 0 or 1"
        );
        assert!(broken(7, 2.0).starts_with("invalid row 1 truncated"));
        assert!(broken(2, 7.0).starts_with("invalid row 1 action: got 7"));
        assert!(broken(2, 0.5).contains("action"), "not an integer");
        assert!(broken(2, -1.0).contains("action"));
        assert!(broken(2, f32::NAN).contains("action"));
        assert!(broken(0, 3e38).starts_with("invalid row 1 observation[0]: got 300000000"));
        assert!(broken(3, f32::INFINITY).starts_with("invalid row 1 reward"));
        assert!(broken(5, f32::NAN).starts_with("invalid row 1 next observation[1]"));
        assert!(rules.check(&good[1..]).is_err(), "a partial row");

        let boxed = Space::Box(emberlab_core::BoxSpace::new(vec![-2.0; 2], vec![2.0; 2]).unwrap());
        let layout = TransitionRows {
            obs_dim: 1,
            act_dim: 2,
        };
        let rules = RowRules::new(layout, &boxed, 10.0).unwrap();
        // Continuous actions are bounded by magnitude, not by the space (noise may pass it).
        assert!(rules.check(&[0.0, 2.5, -3.0, 1.0, 0.0, 0.0, 0.0]).is_ok());
        let e = rules.check(&[0.0, 2.5, -30.0, 1.0, 0.0, 0.0, 0.0]);
        assert!(
            e.unwrap_err()
                .to_string()
                .starts_with("invalid row 0 action[1]")
        );
        assert!(RowRules::new(layout, &boxed, 0.0).is_err());
        assert!(
            RowRules::new(layout, &discrete, 1.0).is_err(),
            "width 2 for Discrete"
        );
    }

    #[test]
    fn rows_round_trip_and_bad_rows_are_refused() {
        let layout = TransitionRows {
            obs_dim: 2,
            act_dim: 1,
        };
        let mut out = Vec::new();
        let t = Transition {
            obs: &[1.0, 2.0],
            action: &[1.0],
            reward: 0.5,
            next_obs: &[3.0, 4.0],
            terminated: false,
            truncated: true,
        };
        layout.push(&t, &mut out).unwrap();
        layout
            .push(
                &Transition {
                    terminated: true,
                    truncated: false,
                    ..t
                },
                &mut out,
            )
            .unwrap();
        assert_eq!(out.len(), 2 * layout.width());
        let back: Vec<_> = layout.rows(&out).unwrap().collect();
        assert_eq!(back[0], t);
        assert!(back[1].terminated && !back[1].truncated);
        assert!(layout.rows(&out[1..]).is_err());
        out[layout.width() - 1] = 0.5;
        assert!(layout.rows(&out).is_err());
        assert!(
            layout
                .push(&Transition { obs: &[1.0], ..t }, &mut out)
                .is_err()
        );
    }
}
