//! Ring storage: preallocated struct-of-arrays columns, O(1) push overwriting the oldest
//! transition, and gathering of sampled rows into a caller's [`Batch`].

use crate::huge_pages::filled_vec;
use crate::layout::prefetch;
use emberlab_core::{Batch, Error, Result, Transition};

/// An extra per-transition column of `f32` (e.g. an n-step discount, a log-prob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name (unique within a storage).
    pub name: String,
    /// Values per transition.
    pub width: usize,
}

/// Fixed-capacity transition storage as columns; slot `i` of every column is transition `i`.
/// Slots fill from 0; once full, each push overwrites the oldest slot.
#[derive(Clone, Debug, PartialEq)]
pub struct RingStorage {
    capacity: usize,
    obs_dim: usize,
    act_dim: usize,
    len: usize,
    head: usize,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    action: Vec<f32>,
    reward: Vec<f32>,
    terminated: Vec<u8>,
    truncated: Vec<u8>,
    extras: Vec<(ColumnSpec, Vec<f32>)>,
}

impl RingStorage {
    /// Storage for `capacity` transitions of the given widths, all memory allocated now.
    pub fn new(capacity: usize, obs_dim: usize, act_dim: usize) -> Result<Self> {
        Self::with_columns(capacity, obs_dim, act_dim, Vec::new())
    }

    /// Like [`RingStorage::new`], with extra user columns.
    pub fn with_columns(
        capacity: usize,
        obs_dim: usize,
        act_dim: usize,
        extras: Vec<ColumnSpec>,
    ) -> Result<Self> {
        if capacity == 0 || capacity > i32::MAX as usize {
            return Err(Error::invalid("capacity", capacity, "1..=2147483647"));
        }
        if obs_dim == 0 {
            return Err(Error::invalid("obs_dim", obs_dim, ">= 1"));
        }
        if act_dim == 0 {
            return Err(Error::invalid("act_dim", act_dim, ">= 1"));
        }
        for (i, c) in extras.iter().enumerate() {
            if c.width == 0 {
                return Err(Error::invalid(
                    format!("column `{}` width", c.name),
                    0,
                    ">= 1",
                ));
            }
            if extras[..i].iter().any(|d| d.name == c.name) {
                return Err(Error::invalid("column name", &c.name, "unique names"));
            }
        }
        Ok(RingStorage {
            capacity,
            obs_dim,
            act_dim,
            len: 0,
            head: 0,
            obs: filled_vec(capacity * obs_dim, 0.0),
            next_obs: filled_vec(capacity * obs_dim, 0.0),
            action: filled_vec(capacity * act_dim, 0.0),
            reward: filled_vec(capacity, 0.0),
            terminated: filled_vec(capacity, 0),
            truncated: filled_vec(capacity, 0),
            extras: extras
                .into_iter()
                .map(|c| {
                    let v = filled_vec(capacity * c.width, 0.0);
                    (c, v)
                })
                .collect(),
        })
    }

    /// Maximum number of transitions held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of transitions held (occupying slots `0..len`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no transition is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot the next push will write.
    pub fn head(&self) -> usize {
        self.head
    }

    /// Observation width.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    /// Action width.
    pub fn act_dim(&self) -> usize {
        self.act_dim
    }

    /// The extra columns, in order.
    pub fn columns(&self) -> impl Iterator<Item = &ColumnSpec> {
        self.extras.iter().map(|(c, _)| c)
    }

    /// Stores `t` (no extra columns may be declared), returning its slot.
    pub fn push(&mut self, t: &Transition<'_>) -> Result<usize> {
        self.push_with(t, &[])
    }

    /// Stores `t` with one slice per extra column, returning its slot. Every length is
    /// checked and every value must be finite (a NaN in replay poisons all later updates);
    /// on error nothing is written.
    pub fn push_with(&mut self, t: &Transition<'_>, extras: &[&[f32]]) -> Result<usize> {
        self.check(t, extras)?;
        let slot = self.head;
        let (o, a) = (self.obs_dim, self.act_dim);
        self.obs[slot * o..(slot + 1) * o].copy_from_slice(t.obs);
        self.next_obs[slot * o..(slot + 1) * o].copy_from_slice(t.next_obs);
        self.action[slot * a..(slot + 1) * a].copy_from_slice(t.action);
        self.reward[slot] = t.reward;
        self.terminated[slot] = t.terminated as u8;
        self.truncated[slot] = t.truncated as u8;
        for ((spec, col), x) in self.extras.iter_mut().zip(extras) {
            let w = spec.width;
            col[slot * w..(slot + 1) * w].copy_from_slice(x);
        }
        self.head = if slot + 1 == self.capacity {
            0
        } else {
            slot + 1
        };
        self.len = (self.len + 1).min(self.capacity);
        Ok(slot)
    }

    fn check(&self, t: &Transition<'_>, extras: &[&[f32]]) -> Result<()> {
        Error::check_len("obs", self.obs_dim, t.obs.len())?;
        Error::check_len("next_obs", self.obs_dim, t.next_obs.len())?;
        Error::check_len("action", self.act_dim, t.action.len())?;
        Error::check_len("extra columns", self.extras.len(), extras.len())?;
        for ((spec, _), x) in self.extras.iter().zip(extras) {
            Error::check_len(&spec.name, spec.width, x.len())?;
        }
        // One branch-free pass over each column; the offender is looked for only when
        // there is one.
        let finite = emberlab_core::all_finite;
        if finite(t.obs)
            && finite(t.next_obs)
            && finite(t.action)
            && t.reward.is_finite()
            && extras.iter().all(|x| finite(x))
        {
            return Ok(());
        }
        let cols: [(&str, &[f32]); 4] = [
            ("obs", t.obs),
            ("next_obs", t.next_obs),
            ("action", t.action),
            ("reward", std::slice::from_ref(&t.reward)),
        ];
        let extra_cols = self
            .extras
            .iter()
            .zip(extras)
            .map(|((s, _), x)| (s.name.as_str(), *x));
        for (name, xs) in cols.into_iter().chain(extra_cols) {
            if let Some(i) = xs.iter().position(|v| !v.is_finite()) {
                return Err(Error::NonFinite {
                    name: format!("{name}[{i}]"),
                    value: xs[i] as f64,
                });
            }
        }
        Ok(())
    }

    /// The transition in `slot` (which must be `< len`).
    pub fn get(&self, slot: usize) -> Result<Transition<'_>> {
        self.check_slot(slot)?;
        let (o, a) = (self.obs_dim, self.act_dim);
        Ok(Transition {
            obs: &self.obs[slot * o..(slot + 1) * o],
            action: &self.action[slot * a..(slot + 1) * a],
            reward: self.reward[slot],
            next_obs: &self.next_obs[slot * o..(slot + 1) * o],
            terminated: self.terminated[slot] != 0,
            truncated: self.truncated[slot] != 0,
        })
    }

    /// The extra column `name`'s values for `slot`.
    pub fn extra(&self, name: &str, slot: usize) -> Result<&[f32]> {
        self.check_slot(slot)?;
        let (spec, col) = self
            .extras
            .iter()
            .find(|(c, _)| c.name == name)
            .ok_or_else(|| Error::invalid("column", name, self.column_names()))?;
        Ok(&col[slot * spec.width..(slot + 1) * spec.width])
    }

    fn column_names(&self) -> String {
        let names: Vec<&str> = self.extras.iter().map(|(c, _)| c.name.as_str()).collect();
        format!("one of {names:?}")
    }

    fn check_slot(&self, slot: usize) -> Result<()> {
        if slot >= self.len {
            return Err(Error::invalid(
                "slot",
                slot,
                format!("< {} (stored transitions)", self.len),
            ));
        }
        Ok(())
    }

    /// Copies the rows `slots` into `batch` (resized to `slots.len()` rows, reusing its
    /// allocations), prefetching rows a few ahead so their cache misses overlap.
    /// `batch.indices` is set to `slots`; `batch.weights` is left to the sampler.
    pub fn gather(&self, slots: &[usize], batch: &mut Batch) -> Result<()> {
        if let Some(&bad) = slots.iter().find(|&&s| s >= self.len) {
            self.check_slot(bad)?;
        }
        let (o, a) = (self.obs_dim, self.act_dim);
        batch.len = slots.len();
        batch.obs_dim = o;
        batch.act_dim = a;
        batch.obs.clear();
        batch.next_obs.clear();
        batch.action.clear();
        batch.reward.clear();
        batch.terminated.clear();
        batch.truncated.clear();
        batch.indices.clear();
        batch.extras.resize_with(self.extras.len(), Vec::new);
        for e in batch.extras.iter_mut() {
            e.clear();
        }
        // Rows are prefetched this far ahead of the copy: enough misses in flight to fill
        // the core's miss buffers, few enough that the lines are still in L1 when copied.
        const AHEAD: usize = 8;
        for &s in slots.iter().take(AHEAD) {
            self.prefetch_row(s);
        }
        for (j, &s) in slots.iter().enumerate() {
            if let Some(&a) = slots.get(j + AHEAD) {
                self.prefetch_row(a);
            }
            batch.obs.extend_from_slice(&self.obs[s * o..(s + 1) * o]);
            batch
                .next_obs
                .extend_from_slice(&self.next_obs[s * o..(s + 1) * o]);
            batch
                .action
                .extend_from_slice(&self.action[s * a..(s + 1) * a]);
            batch.reward.push(self.reward[s]);
            batch.terminated.push(self.terminated[s] as f32);
            batch.truncated.push(self.truncated[s] as f32);
            for ((spec, col), out) in self.extras.iter().zip(batch.extras.iter_mut()) {
                out.extend_from_slice(&col[s * spec.width..(s + 1) * spec.width]);
            }
        }
        batch.indices.extend_from_slice(slots);
        Ok(())
    }

    #[inline]
    fn prefetch_row(&self, s: usize) {
        let (o, a) = (self.obs_dim, self.act_dim);
        let obs = self.obs[s * o..].as_ptr();
        prefetch(obs);
        prefetch(obs.wrapping_add(o - 1));
        let next = self.next_obs[s * o..].as_ptr();
        prefetch(next);
        prefetch(next.wrapping_add(o - 1));
        let act = self.action[s * a..].as_ptr();
        prefetch(act);
        prefetch(act.wrapping_add(a - 1));
        prefetch(&self.reward[s]);
        prefetch(&self.terminated[s]);
        prefetch(&self.truncated[s]);
    }

    /// Raw columns for persistence: `(obs, next_obs, action, reward, terminated, truncated)`.
    pub(crate) fn columns_raw(&self) -> RawColumns<'_> {
        RawColumns {
            obs: &self.obs,
            next_obs: &self.next_obs,
            action: &self.action,
            reward: &self.reward,
            terminated: &self.terminated,
            truncated: &self.truncated,
            extras: &self.extras,
        }
    }

    /// Mutable raw columns and cursor for persistence.
    pub(crate) fn restore_raw(&mut self, len: usize, head: usize) -> RawColumnsMut<'_> {
        self.len = len;
        self.head = head;
        RawColumnsMut {
            obs: &mut self.obs,
            next_obs: &mut self.next_obs,
            action: &mut self.action,
            reward: &mut self.reward,
            terminated: &mut self.terminated,
            truncated: &mut self.truncated,
            extras: &mut self.extras,
        }
    }
}

/// Borrowed columns of a [`RingStorage`].
pub(crate) struct RawColumns<'a> {
    pub obs: &'a [f32],
    pub next_obs: &'a [f32],
    pub action: &'a [f32],
    pub reward: &'a [f32],
    pub terminated: &'a [u8],
    pub truncated: &'a [u8],
    pub extras: &'a [(ColumnSpec, Vec<f32>)],
}

/// Mutably borrowed columns of a [`RingStorage`].
pub(crate) struct RawColumnsMut<'a> {
    pub obs: &'a mut [f32],
    pub next_obs: &'a mut [f32],
    pub action: &'a mut [f32],
    pub reward: &'a mut [f32],
    pub terminated: &'a mut [u8],
    pub truncated: &'a mut [u8],
    pub extras: &'a mut [(ColumnSpec, Vec<f32>)],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t<'a>(o: &'a [f32], a: &'a [f32], r: f32) -> Transition<'a> {
        Transition {
            obs: o,
            action: a,
            reward: r,
            next_obs: o,
            terminated: r > 5.0,
            truncated: false,
        }
    }

    #[test]
    fn push_wraps_and_gathers() {
        let mut s = RingStorage::new(3, 2, 1).unwrap();
        for i in 0..5 {
            let o = [i as f32, -(i as f32)];
            assert_eq!(
                s.push(&t(&o, &[i as f32 * 10.0], i as f32 * 2.0)).unwrap(),
                i % 3
            );
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.head(), 2);
        // slot 0 holds i=3, slot 1 i=4, slot 2 i=2.
        assert_eq!(s.get(0).unwrap().obs, &[3.0, -3.0]);
        let mut b = Batch::default();
        s.gather(&[1, 1, 2], &mut b).unwrap();
        assert_eq!(b.len, 3);
        assert_eq!(b.obs, vec![4.0, -4.0, 4.0, -4.0, 2.0, -2.0]);
        assert_eq!(b.action, vec![40.0, 40.0, 20.0]);
        assert_eq!(b.reward, vec![8.0, 8.0, 4.0]);
        assert_eq!(b.terminated, vec![1.0, 1.0, 0.0]);
        assert_eq!(b.indices, vec![1, 1, 2]);
    }

    #[test]
    fn bad_input_is_an_error_and_writes_nothing() {
        let mut s = RingStorage::new(3, 2, 1).unwrap();
        let e = s.push(&t(&[1.0], &[0.0], 0.0)).unwrap_err().to_string();
        assert!(e.contains("obs") && e.contains("expected 2, got 1"), "{e}");
        let e = s
            .push(&t(&[1.0, f32::NAN], &[0.0], 0.0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("obs[1]"), "{e}");
        assert_eq!(s.len(), 0);
        assert!(s.get(0).is_err());
        let mut b = Batch::default();
        assert!(s.gather(&[0], &mut b).is_err());
        assert!(RingStorage::new(0, 1, 1).is_err());
    }

    #[test]
    fn extra_columns() {
        let spec = vec![ColumnSpec {
            name: "discount".into(),
            width: 1,
        }];
        let mut s = RingStorage::with_columns(4, 1, 1, spec).unwrap();
        assert!(s.push(&t(&[1.0], &[0.0], 0.0)).is_err());
        s.push_with(&t(&[1.0], &[0.0], 0.0), &[&[0.9]]).unwrap();
        s.push_with(&t(&[2.0], &[0.0], 0.0), &[&[0.81]]).unwrap();
        assert_eq!(s.extra("discount", 1).unwrap(), &[0.81]);
        assert!(
            s.extra("nope", 1)
                .unwrap_err()
                .to_string()
                .contains("discount")
        );
        let mut b = Batch::default();
        s.gather(&[1, 0], &mut b).unwrap();
        assert_eq!(b.extras, vec![vec![0.81, 0.9]]);
    }
}
