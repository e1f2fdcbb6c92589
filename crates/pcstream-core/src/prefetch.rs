//! Software prefetch: a hint to start loading a cache line, used where the simulator knows the
//! next addresses (upcoming requests' map entries) long before it needs them.

/// Start loading the cache line holding `x` into all cache levels. No effect on results.
#[inline(always)]
pub fn read<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: a prefetch is a hint that never faults and never changes memory; `x` is a
        // valid reference anyway.
        #[allow(unsafe_code)]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                x as *const T as *const i8,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = x;
    }
}
