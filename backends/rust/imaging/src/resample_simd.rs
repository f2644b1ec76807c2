//! The 8-bit horizontal resample pass with SSE4.1: a pixel's channels as
//! four `i32` lanes, one multiply and one add per tap. The sums are integers,
//! so their order does not matter: the result is the scalar pass's (Pillow's)
//! exactly.

/// Whether this CPU can run [`row`] (asked once per pass; std caches it).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU has AVX2, for passes the compiler vectorises itself.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One row of `C` (3 or 4) channels. Each tap reads four bytes, so for
/// `C == 3` the caller gives `row` one byte past its last pixel.
///
/// # Safety
/// [`available`] is true, every `(xmin, xmax)` of `bounds` has
/// `(xmin + xmax - 1) * C + 4 <= row.len()`, `fixed` holds `ksize` taps per
/// output pixel, and `out` holds `bounds.len() * C` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.1")]
pub unsafe fn row<const C: usize>(
    row: &[u8],
    out: &mut [u8],
    bounds: &[(usize, usize)],
    fixed: &[i32],
    ksize: usize,
    (start, shift): (i32, i32),
) {
    use std::arch::x86_64::*;
    let shift = _mm_cvtsi32_si128(shift);
    for (xx, (&(xmin, xmax), pixel_out)) in bounds.iter().zip(out.chunks_exact_mut(C)).enumerate() {
        let taps = fixed.get_unchecked(xx * ksize..xx * ksize + xmax);
        let first = row.as_ptr().add(xmin * C);
        let mut acc = _mm_set1_epi32(start);
        for (t, &k) in taps.iter().enumerate() {
            let bytes = (first.add(t * C) as *const i32).read_unaligned();
            let pixel = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(bytes));
            acc = _mm_add_epi32(acc, _mm_mullo_epi32(pixel, _mm_set1_epi32(k)));
        }
        // >> PRECISION_BITS, then clamped to 0..=255 by the two saturating packs.
        let sums = _mm_sra_epi32(acc, shift);
        let packed = _mm_packus_epi16(_mm_packs_epi32(sums, sums), _mm_setzero_si128());
        let bytes = _mm_cvtsi128_si32(packed).to_le_bytes();
        pixel_out.copy_from_slice(&bytes[..C]);
    }
}
