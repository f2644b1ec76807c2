//! Pillow's resampling (`libImaging/Resample.c` and, for nearest,
//! `ImagingScaleAffine`), ported step for step so that the pixels are equal:
//! coefficients in `f64`, 8-bit passes in 22-bit fixed point, the horizontal
//! pass first over the rows the vertical pass will read.

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

/// A pixel type both passes handle: `u8` in fixed point, `f32` in `f64`.
pub trait Sample: Copy + Default + Send + Sync {
    fn pass(src: &[Self], taps: &[f64], fixed: &[i32], start: usize, step: usize) -> Self;
}

impl Sample for u8 {
    fn pass(src: &[u8], _taps: &[f64], fixed: &[i32], start: usize, step: usize) -> u8 {
        let mut sum: i32 = 1 << (PRECISION_BITS - 1);
        for (i, &k) in fixed.iter().enumerate() {
            sum = sum.wrapping_add(src[start + i * step] as i32 * k);
        }
        clip8(sum)
    }
}

impl Sample for f32 {
    fn pass(src: &[f32], taps: &[f64], _fixed: &[i32], start: usize, step: usize) -> f32 {
        let mut sum = 0.0f64;
        for (i, &k) in taps.iter().enumerate() {
            sum += src[start + i * step] as f64 * k;
        }
        sum as f32
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
    let vertical = coefficients(height, out_h, filter);
    let first_row = vertical.bounds[0].0;
    let last = vertical.bounds[out_h - 1];
    let last_row = last.0 + last.1;
    let (mut image, mut row_offset) = (None, 0);
    if out_w != width {
        let horizontal = coefficients(width, out_w, filter);
        let fixed = fixed_point(&horizontal.weights);
        let rows = last_row - first_row;
        let mut out = vec![T::default(); rows * out_w * channels];
        for yy in 0..rows {
            let row = (yy + first_row) * width * channels;
            for xx in 0..out_w {
                let (xmin, xmax) = horizontal.bounds[xx];
                let span = xx * horizontal.ksize..xx * horizontal.ksize + xmax;
                for c in 0..channels {
                    out[(yy * out_w + xx) * channels + c] = T::pass(
                        src,
                        &horizontal.weights[span.clone()],
                        &fixed[span.clone()],
                        row + xmin * channels + c,
                        channels,
                    );
                }
            }
        }
        image = Some(out);
        row_offset = first_row;
    }
    let source: &[T] = image.as_deref().unwrap_or(src);
    if out_h == height {
        return image.unwrap_or_else(|| src.to_vec());
    }
    let fixed = fixed_point(&vertical.weights);
    let stride = out_w * channels;
    let mut out = vec![T::default(); out_h * stride];
    for yy in 0..out_h {
        let (ymin, ymax) = vertical.bounds[yy];
        let span = yy * vertical.ksize..yy * vertical.ksize + ymax;
        let top = ymin - row_offset;
        for i in 0..stride {
            out[yy * stride + i] = T::pass(
                source,
                &vertical.weights[span.clone()],
                &fixed[span.clone()],
                top * stride + i,
                stride,
            );
        }
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
