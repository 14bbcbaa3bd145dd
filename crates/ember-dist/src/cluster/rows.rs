//! How a transition travels as one row of floats between an actor and a learner.

use ember_core::{Error, Result, Transition};

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

#[cfg(test)]
mod tests {
    use super::*;

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
