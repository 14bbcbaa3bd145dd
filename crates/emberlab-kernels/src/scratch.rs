//! Large host buffers kept for reuse on the thread that freed them.
//!
//! A convolution's unfolded input is tens of megabytes at a policy-gradient minibatch
//! (128 stacks × 400 positions × 256 values for the Nature CNN's first layer: 52 MB). The
//! allocator hands such blocks back to the OS when they are freed, so each new one came
//! back as fresh pages the kernel zeroes on first touch: `perf` of PPO on Pong put 11% of
//! the samples in page clearing and `memset` under `im2col`. [`take`] reuses a buffer
//! [`give`] kept, on the same thread (each half of an update by rows stays on its core).
//! The pool holds at most [`KEEP`] buffers per thread and gives nothing back to the OS:
//! for PPO's Nature CNN at minibatches of 256 split in halves, about 100 MB per thread,
//! within the memory that run peaked at before (its maximum resident set did not move).

use std::cell::RefCell;

/// Buffers below this many values come cheaply from the allocator's own caches.
const SMALL: usize = 1 << 18;
/// Buffers kept per thread at most (a network's unfolded inputs and a few temporaries).
const KEEP: usize = 8;
/// A kept buffer serves a request of at least `capacity / WASTE` values.
const WASTE: usize = 4;

thread_local! {
    static FREE: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` values whose contents are unspecified (stale values of an earlier use,
/// or zeros): for results written in full.
pub(crate) fn take(len: usize) -> Vec<f32> {
    kept(len).unwrap_or_else(|| vec![0.0; len])
}

/// A kept buffer of `len` values (stale contents), if this thread has one that fits.
fn kept(len: usize) -> Option<Vec<f32>> {
    let kept = (len >= SMALL)
        .then(|| {
            // During the thread's teardown the pool is gone: allocate instead.
            FREE.try_with(|free| {
                let mut free = free.borrow_mut();
                let best = free
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.capacity() >= len && v.capacity() / WASTE <= len)
                    .min_by_key(|(_, v)| v.capacity())
                    .map(|(i, _)| i)?;
                Some(free.swap_remove(best))
            })
            .ok()
            .flatten()
        })
        .flatten();
    kept.map(|mut v| {
        if v.len() >= len {
            v.truncate(len);
        } else {
            v.resize(len, 0.0);
        }
        v
    })
}

/// A buffer of `len` zeros (a fresh allocation comes zeroed already).
pub(crate) fn take_zeroed(len: usize) -> Vec<f32> {
    match kept(len) {
        Some(mut v) => {
            v.fill(0.0);
            v
        }
        None => vec![0.0; len],
    }
}

/// Keeps `v` for a later [`take`] on this thread (the smallest kept buffer makes room when
/// [`KEEP`] are kept already); small buffers are simply freed.
pub(crate) fn give(v: Vec<f32>) {
    if v.capacity() < SMALL {
        return;
    }
    // During the thread's teardown the pool is gone: `v` is simply freed.
    let _ = FREE.try_with(|free| {
        let mut free = free.borrow_mut();
        free.push(v);
        if free.len() > KEEP
            && let Some(smallest) = (0..free.len()).min_by_key(|&i| free[i].capacity())
        {
            free.swap_remove(smallest);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_serves_the_next_request_of_its_size_on_its_thread() {
        let size = SMALL * 8;
        let mut v = take(size);
        v.fill(7.0);
        let at = v.as_ptr();
        give(v);
        let again = take(size - 5);
        assert_eq!(again.as_ptr(), at, "the kept buffer was not reused");
        assert_eq!(again.len(), size - 5);
        give(again);
        // Far smaller requests do not take a large buffer.
        let small = take(size / WASTE - 1);
        assert_ne!(small.as_ptr(), at);
        // Another thread does not see this thread's buffers.
        let other = std::thread::spawn(move || {
            let v = take(size);
            v.as_ptr() as usize
        })
        .join()
        .unwrap();
        assert_ne!(other, at as usize);
        let zeros = take_zeroed(size);
        assert_eq!(zeros.as_ptr(), at);
        assert!(zeros.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn at_most_keep_buffers_are_kept_and_the_smallest_goes_first() {
        for i in 0..KEEP + 3 {
            give(Vec::with_capacity(SMALL * (i + 1)));
        }
        FREE.with(|free| {
            let free = free.borrow();
            assert_eq!(free.len(), KEEP);
            assert!(free.iter().all(|v| v.capacity() >= SMALL * 4));
        });
    }
}
