//! Thread settings of the backends that have them.

use crate::spec::Backend;

/// Sets the number of threads a backend uses inside one operation (libtorch's intra-op
/// pool). When two networks train on two threads under libtorch, set it to 1 so they do not
/// fight over the cores. Returns whether the backend has such a setting in this build
/// (flex and ndarray run each operation on the calling thread: nothing to set).
pub fn set_intra_op_threads(backend: Backend, threads: usize) -> bool {
    match backend {
        #[cfg(feature = "tch")]
        Backend::Tch => {
            tch::set_num_threads(threads.max(1) as i32);
            true
        }
        _ => {
            let _ = threads;
            false
        }
    }
}

/// The number of intra-op threads the backend currently uses, where it has the setting.
pub fn intra_op_threads(backend: Backend) -> Option<usize> {
    match backend {
        #[cfg(feature = "tch")]
        Backend::Tch => Some(tch::get_num_threads().max(1) as usize),
        _ => None,
    }
}
