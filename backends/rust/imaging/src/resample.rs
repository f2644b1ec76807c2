//! Pillow's resampling (`libImaging/Resample.c` and, for nearest,
//! `ImagingScaleAffine`), ported step for step so that the pixels are equal:
//! coefficients in `f64`, 8-bit passes in 22-bit fixed point, the two passes
//! in Pillow 13's order.

use crate::resample_simd;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos,
}

impl Filter {
    pub fn from_name(name: &str) -> Option<Filter> {
        Some(match name {
            "nearest" => Filter::Nearest,
            "bilinear" => Filter::Bilinear,
            "bicubic" => Filter::Bicubic,
            "lanczos" => Filter::Lanczos,
            _ => return None,
        })
    }

    fn support(self) -> f64 {
        match self {
            Filter::Nearest => 0.0,
            Filter::Bilinear => 1.0,
            Filter::Bicubic => 2.0,
            Filter::Lanczos => 3.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        match self {
            Filter::Nearest => 0.0,
            Filter::Bilinear => {
                let x = x.abs();
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
            Filter::Bicubic => {
                const A: f64 = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
            Filter::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let x = x * std::f64::consts::PI;
    x.sin() / x
}

const PRECISION_BITS: u32 = 32 - 8 - 2;

/// One output position's source span and weights (Pillow's `precompute_coeffs`).
struct Coefficients {
    ksize: usize,
    bounds: Vec<(usize, usize)>,
    weights: Vec<f64>,
}

fn coefficients(in_size: usize, out_size: usize, filter: Filter) -> Coefficients {
    // Pillow's box is a float[4]; (in1 - in0) is a float before it is a double.
    let scale = (in_size as f32) as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filter.support() * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let mut bounds = Vec::with_capacity(out_size);
    let mut weights = vec![0.0; out_size * ksize];
    for xx in 0..out_size {
        let center = (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        let xmin = ((center - support + 0.5) as i64).max(0) as usize;
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize - xmin;
        let k = &mut weights[xx * ksize..xx * ksize + ksize];
        let mut ww = 0.0;
        for (x, slot) in k.iter_mut().enumerate().take(xmax) {
            let w = filter.weight((x as f64 + xmin as f64 - center + 0.5) * ss);
            *slot = w;
            ww += w;
        }
        if ww != 0.0 {
            for slot in k.iter_mut().take(xmax) {
                *slot /= ww;
            }
        }
        bounds.push((xmin, xmax));
    }
    Coefficients {
        ksize,
        bounds,
        weights,
    }
}

fn fixed_point(weights: &[f64]) -> Vec<i32> {
    let one = (1i64 << PRECISION_BITS) as f64;
    weights
        .iter()
        .map(|&k| {
            if k < 0.0 {
                (-0.5 + k * one) as i32
            } else {
                (0.5 + k * one) as i32
            }
        })
        .collect()
}

fn clip8(sum: i32) -> u8 {
    (sum >> PRECISION_BITS).clamp(0, 255) as u8
}

/// A pixel type both passes handle: `u8` in 22-bit fixed point, `f32` in `f64`.
/// Each output value sums its taps in order, as Pillow does.
pub trait Sample: Copy + Default + Send + Sync {
    type Acc: Copy;
    const START: Self::Acc;
    fn mac(acc: Self::Acc, x: Self, fixed: i32, weight: f64) -> Self::Acc;
    fn finish(acc: Self::Acc) -> Self;
    /// The horizontal pass in SIMD over `[height, width, channels, out_w]`,
    /// where this type and CPU have one.
    fn horizontal_simd(_src: &[Self], _dims: [usize; 4], _filter: Filter) -> Option<Vec<Self>> {
        None
    }
}

impl Sample for u8 {
    type Acc = i32;
    const START: i32 = 1 << (PRECISION_BITS - 1);
    #[inline(always)]
    fn mac(acc: i32, x: u8, fixed: i32, _weight: f64) -> i32 {
        acc.wrapping_add(x as i32 * fixed)
    }
    #[inline(always)]
    fn finish(acc: i32) -> u8 {
        clip8(acc)
    }
    #[cfg(target_arch = "x86_64")]
    fn horizontal_simd(
        src: &[u8],
        [h, w, c, out_w]: [usize; 4],
        filter: Filter,
    ) -> Option<Vec<u8>> {
        match c {
            3 if resample_simd::available() => Some(horizontal_simd::<3>(src, h, w, out_w, filter)),
            4 if resample_simd::available() => Some(horizontal_simd::<4>(src, h, w, out_w, filter)),
            _ => None,
        }
    }
}

impl Sample for f32 {
    type Acc = f64;
    const START: f64 = 0.0;
    #[inline(always)]
    fn mac(acc: f64, x: f32, _fixed: i32, weight: f64) -> f64 {
        acc + x as f64 * weight
    }
    #[inline(always)]
    fn finish(acc: f64) -> f32 {
        acc as f32
    }
}

/// Resize an HWC image of `channels` to `out_h` × `out_w`, as Pillow's
/// `Image.resize(size, filter, reducing_gap=None)` does each band.
pub fn resize<T: Sample>(
    src: &[T],
    height: usize,
    width: usize,
    channels: usize,
    out_h: usize,
    out_w: usize,
    filter: Filter,
) -> Vec<T> {
    if (height, width) == (out_h, out_w) {
        return src.to_vec();
    }
    if filter == Filter::Nearest {
        return nearest(src, height, width, channels, out_h, out_w);
    }
    let mut image = None;
    if vertical_first(height, width, out_h, out_w) {
        if out_h != height {
            image = Some(vertical(src, height, width * channels, out_h, filter));
        }
        if out_w != width {
            let source: &[T] = image.as_deref().unwrap_or(src);
            image = Some(horizontal(source, out_h, width, channels, out_w, filter));
        }
        return image.unwrap_or_else(|| src.to_vec());
    }
    if out_w != width {
        image = Some(horizontal(src, height, width, channels, out_w, filter));
    }
    if out_h != height {
        let source: &[T] = image.as_deref().unwrap_or(src);
        image = Some(vertical(source, height, out_w * channels, out_h, filter));
    }
    image.unwrap_or_else(|| src.to_vec())
}

/// Pillow 13's pass order (`ImagingResampleInner`): the vertical pass first
/// when the height shrinks by more than twice the width's shrink. Each pass
/// rounds, so the order moves bicubic and lanczos results.
fn vertical_first(height: usize, width: usize, out_h: usize, out_w: usize) -> bool {
    let shrink_h = height as i64 - out_h as i64;
    shrink_h > 0 && shrink_h > (width as i64 - out_w as i64) * 2
}

fn horizontal<T: Sample>(
    src: &[T],
    height: usize,
    width: usize,
    channels: usize,
    out_w: usize,
    filter: Filter,
) -> Vec<T> {
    if let Some(out) = T::horizontal_simd(src, [height, width, channels, out_w], filter) {
        return out;
    }
    // A constant channel count lets the compiler keep each pixel's sums in registers.
    match channels {
        1 => horizontal_pass::<T, 1>(src, height, width, out_w, filter),
        2 => horizontal_pass::<T, 2>(src, height, width, out_w, filter),
        3 => horizontal_pass::<T, 3>(src, height, width, out_w, filter),
        _ => horizontal_pass::<T, 4>(src, height, width, out_w, filter),
    }
}

/// The horizontal pass: each output sums its taps in order.
fn horizontal_pass<T: Sample, const C: usize>(
    src: &[T],
    height: usize,
    width: usize,
    out_w: usize,
    filter: Filter,
) -> Vec<T> {
    let taps = coefficients(width, out_w, filter);
    let fixed = fixed_point(&taps.weights);
    let mut out = Vec::with_capacity(height * out_w * C);
    for row in src.chunks_exact(width * C) {
        for (xx, &(xmin, xmax)) in taps.bounds.iter().enumerate() {
            let span = xx * taps.ksize..xx * taps.ksize + xmax;
            let pixels = row[xmin * C..(xmin + xmax) * C].chunks_exact(C);
            let mut acc = [T::START; C];
            for ((pixel, &k), &w) in pixels.zip(&fixed[span.clone()]).zip(&taps.weights[span]) {
                for c in 0..C {
                    acc[c] = T::mac(acc[c], pixel[c], k, w);
                }
            }
            out.extend(acc.iter().map(|&a| T::finish(a)));
        }
    }
    out
}

/// The 8-bit horizontal pass with SSE4.1 (`resample_simd`): integer sums, so
/// the result is the scalar pass's, Pillow's.
#[cfg(target_arch = "x86_64")]
fn horizontal_simd<const C: usize>(
    src: &[u8],
    height: usize,
    width: usize,
    out_w: usize,
    filter: Filter,
) -> Vec<u8> {
    let taps = coefficients(width, out_w, filter);
    let fixed = fixed_point(&taps.weights);
    let mut out = vec![0u8; height * out_w * C];
    let stride = width * C;
    let precision = (<u8 as Sample>::START, PRECISION_BITS as i32);
    for (y, out_row) in out.chunks_exact_mut(out_w * C).enumerate() {
        // Every tap reads four bytes: the last row of three channels gets a byte more.
        let extra = usize::from(C == 3);
        let padded;
        let row = match src.get(y * stride..(y + 1) * stride + extra) {
            Some(row) => row,
            None => {
                padded = [&src[y * stride..(y + 1) * stride], &[0]].concat();
                &padded
            }
        };
        // SAFETY: the only caller (`horizontal_simd` of u8) checked `available()`
        // and passes C = 3 or 4; `coefficients` keeps every span inside the
        // `width` pixels (xmin + xmax <= width) and `row` has a byte past its
        // end for C == 3, so each 4-byte read, at most (xmin + xmax - 1) * C + 4,
        // is in `row`; `fixed` has `ksize` taps per output pixel, each xmax <=
        // ksize, and `out_row` is out_w * C bytes for the out_w bounds.
        unsafe {
            resample_simd::row::<C>(row, out_row, &taps.bounds, &fixed, taps.ksize, precision)
        };
    }
    out
}

fn vertical<T: Sample>(
    src: &[T],
    height: usize,
    stride: usize,
    out_h: usize,
    filter: Filter,
) -> Vec<T> {
    let dims = [height, stride, out_h];
    if resample_simd::has_avx2() {
        // SAFETY: has_avx2() just detected AVX2 on this CPU, the only
        // requirement of vertical_avx2 (its body is safe code).
        return unsafe { vertical_avx2(src, dims, filter) };
    }
    vertical_pass(src, dims, filter)
}

/// The same pass compiled for AVX2: LLVM vectorises the row sums 8 wide.
///
/// # Safety
/// The CPU supports AVX2 (`resample_simd::has_avx2()`): the body is compiled
/// with it enabled.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn vertical_avx2<T: Sample>(src: &[T], dims: [usize; 3], filter: Filter) -> Vec<T> {
    vertical_pass(src, dims, filter)
}

/// The portable pass, under the x86-64 version's name.
///
/// # Safety
/// None beyond the x86-64 version's signature: it is plain safe code.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn vertical_avx2<T: Sample>(src: &[T], dims: [usize; 3], filter: Filter) -> Vec<T> {
    vertical_pass(src, dims, filter)
}

#[inline(always)]
fn vertical_pass<T: Sample>(
    src: &[T],
    [height, stride, out_h]: [usize; 3],
    filter: Filter,
) -> Vec<T> {
    let taps = coefficients(height, out_h, filter);
    let fixed = fixed_point(&taps.weights);
    let mut out = Vec::with_capacity(out_h * stride);
    let mut acc = vec![T::START; stride];
    for (yy, &(ymin, ymax)) in taps.bounds.iter().enumerate() {
        acc.fill(T::START);
        let span = yy * taps.ksize..yy * taps.ksize + ymax;
        let rows = src[ymin * stride..(ymin + ymax) * stride].chunks_exact(stride);
        for ((row, &k), &w) in rows.zip(&fixed[span.clone()]).zip(&taps.weights[span]) {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = T::mac(*a, x, k, w);
            }
        }
        out.extend(acc.iter().map(|&a| T::finish(a)));
    }
    out
}

/// Pillow's nearest resize: an affine scale whose source positions accumulate
/// in `f64` from the first pixel's centre.
fn nearest<T: Copy>(
    src: &[T],
    height: usize,
    width: usize,
    channels: usize,
    out_h: usize,
    out_w: usize,
) -> Vec<T> {
    fn positions(in_size: usize, out_size: usize) -> Vec<usize> {
        let step = (in_size as f32) as f64 / out_size as f64;
        let mut at = step * 0.5;
        (0..out_size)
            .map(|_| {
                let position = (at.max(0.0) as usize).min(in_size - 1);
                at += step;
                position
            })
            .collect()
    }
    let (columns, rows) = (positions(width, out_w), positions(height, out_h));
    let mut out = Vec::with_capacity(out_h * out_w * channels);
    for &y in &rows {
        for &x in &columns {
            let at = (y * width + x) * channels;
            out.extend_from_slice(&src[at..at + channels]);
        }
    }
    out
}
