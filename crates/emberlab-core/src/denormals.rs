//! Flushing denormal floats on the threads that run network math.
//!
//! Adam's second moments underflow into denormal (subnormal) floats during training, and
//! every operation on a denormal takes a slow micro-code path: an end-to-end SAC run spent a
//! third of its CPU in the optimizer loop because of it. Ember therefore sets the CPU's
//! flush-to-zero and denormals-are-zero modes (x86-64 MXCSR `FTZ | DAZ`, AArch64 FPCR `FZ`)
//! on every thread while it runs network math (an update, an act, a worker job) and
//! restores the thread's previous mode afterwards — TensorFlow does the same on its CPU
//! threads. Denormals are below 1.2e-38: flushing them to zero changes no result that a
//! network could tell apart, and runs stay reproducible (the same seed gives the same
//! result on the same machine).
//!
//! **The switch**: [`set_flush_denormals`]`(false)`, or the environment variable
//! `EMBER_IEEE_DENORMALS=1` read once at first use, keeps IEEE behaviour (Ember then leaves
//! the threads' modes alone). On other architectures nothing is changed.

use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not decided yet (read the environment), 1: flush, 2: keep IEEE.
static SWITCH: AtomicU8 = AtomicU8::new(0);

/// Turns flushing on (the default) or off for every thread from now on.
pub fn set_flush_denormals(on: bool) {
    SWITCH.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether Ember flushes denormals on its threads (see the module docs for the switch).
pub fn flush_denormals() -> bool {
    match SWITCH.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ieee = std::env::var_os("EMBER_IEEE_DENORMALS").is_some_and(|v| v != "0");
            set_flush_denormals(!ieee);
            !ieee
        }
    }
}

/// Whether the calling thread currently flushes denormals (always `false` where Ember
/// cannot set the mode).
pub fn denormals_flushed() -> bool {
    fpu::read().is_some_and(|mode| mode & fpu::FLUSH == fpu::FLUSH)
}

/// Restores the thread's floating-point mode when dropped; see [`flush_denormals_here`].
#[must_use = "the mode is restored when the guard is dropped"]
#[derive(Debug)]
pub struct DenormalGuard {
    saved: Option<fpu::Mode>,
}

impl Drop for DenormalGuard {
    fn drop(&mut self) {
        if let Some(mode) = self.saved {
            fpu::write(mode);
        }
    }
}

/// Sets flush-to-zero / denormals-are-zero on the calling thread until the returned guard
/// is dropped (nothing when the switch is off or the architecture has no such mode).
pub fn flush_denormals_here() -> DenormalGuard {
    if !flush_denormals() {
        return DenormalGuard { saved: None };
    }
    match fpu::read() {
        Some(mode) if mode & fpu::FLUSH != fpu::FLUSH => {
            fpu::write(mode | fpu::FLUSH);
            DenormalGuard { saved: Some(mode) }
        }
        _ => DenormalGuard { saved: None },
    }
}

#[cfg(target_arch = "x86_64")]
mod fpu {
    pub type Mode = u32;
    /// MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6).
    pub const FLUSH: Mode = (1 << 15) | (1 << 6);

    pub fn read() -> Option<Mode> {
        let mut csr: u32 = 0;
        // SAFETY: `stmxcsr` stores the 32-bit MXCSR register into the given address, which
        // is a valid, writable u32; SSE is part of every x86-64 CPU.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
        }
        Some(csr)
    }

    pub fn write(mode: Mode) {
        // SAFETY: `ldmxcsr` loads MXCSR from a valid u32; `mode` comes from `read` with
        // only the FTZ/DAZ bits changed, both defined on every x86-64 CPU with SSE2.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &mode, options(nostack, readonly, preserves_flags));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod fpu {
    pub type Mode = u64;
    /// FPCR flush-to-zero (bit 24).
    pub const FLUSH: Mode = 1 << 24;

    pub fn read() -> Option<Mode> {
        let v: u64;
        // SAFETY: reading FPCR has no side effects and is allowed at EL0.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nomem, nostack, preserves_flags));
        }
        Some(v)
    }

    pub fn write(mode: Mode) {
        // SAFETY: writing FPCR at EL0 is allowed; only the FZ bit differs from the value read.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) mode, options(nomem, nostack, preserves_flags));
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod fpu {
    pub type Mode = u32;
    pub const FLUSH: Mode = 0;

    pub fn read() -> Option<Mode> {
        None
    }

    pub fn write(_mode: Mode) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    /// Half the smallest normal float: a denormal under IEEE rules, zero when flushed.
    fn half_min() -> f32 {
        black_box(f32::MIN_POSITIVE) / black_box(2.0)
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn the_guard_flushes_and_restores_and_the_switch_keeps_ieee() {
        // One test owns the process-wide switch.
        assert!(!denormals_flushed(), "threads start in IEEE mode");
        assert!(half_min() > 0.0);
        set_flush_denormals(true);
        {
            let _g = flush_denormals_here();
            assert!(denormals_flushed());
            assert_eq!(half_min(), 0.0);
            {
                let _nested = flush_denormals_here();
                assert!(denormals_flushed());
            }
            assert!(denormals_flushed(), "an inner guard leaves the outer mode");
        }
        assert!(!denormals_flushed(), "restored");
        assert!(half_min() > 0.0);
        set_flush_denormals(false);
        {
            let _g = flush_denormals_here();
            assert!(!denormals_flushed(), "switched off: IEEE kept");
            assert!(half_min() > 0.0);
        }
        set_flush_denormals(true);
    }
}
