//! Transparent huge pages for the big arrays.
//!
//! A sampled batch touches ~2,000 random cache lines spread over a few hundred megabytes.
//! With 4 KiB pages nearly every one of them also misses the TLB and pays a page walk;
//! with 2 MiB pages the whole buffer fits in the TLB. Linux backs memory with huge pages
//! only where asked (`madvise` mode, the common default), so large columns are allocated
//! first, advised, and only then written (the first write faults the pages in).

/// Below this size huge pages are not worth asking for.
const MIN_BYTES: usize = 4 << 20;

/// A vector of `n` copies of `value` whose memory has been advised to use huge pages
/// before it was first written.
pub fn filled_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise(v.as_ptr() as usize, n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

#[cfg(target_os = "linux")]
fn advise(start: usize, len: usize) {
    if len < MIN_BYTES {
        return;
    }
    const PAGE: usize = 4096;
    let begin = start.next_multiple_of(PAGE);
    let end = (start + len) / PAGE * PAGE;
    if end > begin {
        // SAFETY: the range lies inside an allocation we own; MADV_HUGEPAGE only changes
        // how the kernel backs it, never its contents. Failure (e.g. THP disabled) is
        // harmless and ignored.
        unsafe {
            libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn filled_vec_is_filled() {
        let v = super::filled_vec(3 << 20, 1.5f32);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 1.5));
        assert_eq!(super::filled_vec(3, 7u8), vec![7, 7, 7]);
    }
}
