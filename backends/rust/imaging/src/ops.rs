//! The ops other than decoding and resampling, each equal to the reference's
//! NumPy expression (named in each function's comment).

use crate::random::ItemRandom;
use crate::{Image, Pixels};

/// Apply `f` to the pixel vector whatever its type.
macro_rules! each_type {
    ($pixels:expr, $v:ident => $body:expr) => {
        match $pixels {
            Pixels::U8($v) => Pixels::U8($body),
            Pixels::F32($v) => Pixels::F32($body),
        }
    };
}

fn remap<T: Copy>(
    src: &[T],
    channels: usize,
    out_h: usize,
    out_w: usize,
    at: impl Fn(usize, usize) -> usize,
) -> Vec<T> {
    let mut out = Vec::with_capacity(out_h * out_w * channels);
    for y in 0..out_h {
        for x in 0..out_w {
            let start = at(y, x) * channels;
            out.extend_from_slice(&src[start..start + channels]);
        }
    }
    out
}

/// `image[top:top+h, left:left+w]` (the caller checked that it fits).
pub fn crop(image: Image, top: usize, left: usize, h: usize, w: usize) -> Image {
    let (width, c) = (image.width, image.channels);
    let pixels = each_type!(image.pixels, v => {
        let mut out = Vec::with_capacity(h * w * c);
        for y in top..top + h {
            let row = (y * width + left) * c;
            out.extend_from_slice(&v[row..row + w * c]);
        }
        out
    });
    Image {
        height: h,
        width: w,
        pixels,
        ..image
    }
}

/// `np.pad(image, ((top, bottom), (left, right), (0, 0)), constant_values=value)`.
pub fn pad(
    image: Image,
    top: usize,
    bottom: usize,
    left: usize,
    right: usize,
    value: f64,
) -> Image {
    let (h, w, c) = (image.height, image.width, image.channels);
    let (out_h, out_w) = (h + top + bottom, w + left + right);
    fn fill<T: Copy>(v: &[T], value: T, dims: [usize; 7]) -> Vec<T> {
        let [h, w, c, top, left, out_h, out_w] = dims;
        let mut out = vec![value; out_h * out_w * c];
        for y in 0..h {
            let to = ((y + top) * out_w + left) * c;
            out[to..to + w * c].copy_from_slice(&v[y * w * c..(y + 1) * w * c]);
        }
        out
    }
    let dims = [h, w, c, top, left, out_h, out_w];
    let pixels = match image.pixels {
        Pixels::U8(v) => Pixels::U8(fill(&v, value as u8, dims)),
        Pixels::F32(v) => Pixels::F32(fill(&v, value as f32, dims)),
    };
    Image {
        height: out_h,
        width: out_w,
        pixels,
        ..image
    }
}

/// torchvision's `center_crop`: zero padding where the crop is larger, then
/// the box at `round((H - h) / 2)` (half to even, as Python's `round`).
pub fn center_crop(image: Image, h: usize, w: usize) -> Image {
    let mut image = image;
    if h > image.height || w > image.width {
        let pad_h = h.saturating_sub(image.height);
        let pad_w = w.saturating_sub(image.width);
        image = pad(
            image,
            pad_h / 2,
            pad_h.div_ceil(2),
            pad_w / 2,
            pad_w.div_ceil(2),
            0.0,
        );
    }
    let (top, left) = center_origin(image.height, image.width, h, w);
    crop(image, top, left, h, w)
}

/// Where a centred `h` × `w` box starts in a `height` × `width` image it fits.
pub fn center_origin(height: usize, width: usize, h: usize, w: usize) -> (usize, usize) {
    let top = ((height - h) as f64 / 2.0).round_ties_even() as usize;
    let left = ((width - w) as f64 / 2.0).round_ties_even() as usize;
    (top, left)
}

/// `np.flip(image, 1)` (`horizontal`) or `np.flip(image, 0)`.
pub fn flip(image: Image, horizontal: bool) -> Image {
    fn flipped<T: Copy + Default>(v: &[T], w: usize, c: usize, horizontal: bool) -> Vec<T> {
        let stride = w * c;
        if stride == 0 {
            return v.to_vec();
        }
        if !horizontal {
            return v.chunks_exact(stride).rev().flatten().copied().collect();
        }
        // A constant channel count makes each pixel's move a few register copies.
        match c {
            1 => mirrored::<T, 1>(v, stride),
            3 => mirrored::<T, 3>(v, stride),
            4 => mirrored::<T, 4>(v, stride),
            _ => v
                .chunks_exact(stride)
                .flat_map(|row| row.chunks_exact(c).rev().flatten().copied())
                .collect(),
        }
    }
    fn mirrored<T: Copy + Default, const C: usize>(v: &[T], stride: usize) -> Vec<T> {
        let mut out = vec![T::default(); v.len()];
        for (row, out_row) in v.chunks_exact(stride).zip(out.chunks_exact_mut(stride)) {
            for (to, from) in out_row.chunks_exact_mut(C).zip(row.chunks_exact(C).rev()) {
                to.copy_from_slice(from);
            }
        }
        out
    }
    let (w, c) = (image.width, image.channels);
    let pixels = each_type!(image.pixels, v => flipped(&v, w, c, horizontal));
    Image { pixels, ..image }
}

/// `np.rot90(image, k, axes=(0, 1))`: counter-clockwise quarter turns.
pub fn rotate90(image: Image, k: i64) -> Image {
    let turns = k.rem_euclid(4);
    let (h, w, c) = (image.height, image.width, image.channels);
    let (out_h, out_w) = if turns % 2 == 1 { (w, h) } else { (h, w) };
    let pixels = each_type!(image.pixels, v => remap(&v, c, out_h, out_w, |y, x| match turns {
        0 => y * w + x,
        1 => x * w + (w - 1 - y),
        2 => (h - 1 - y) * w + (w - 1 - x),
        _ => (h - 1 - x) * w + y,
    }));
    Image {
        height: out_h,
        width: out_w,
        pixels,
        ..image
    }
}

/// Three channels: gray repeated, alpha dropped (u8 only).
pub fn to_rgb(image: Image) -> Image {
    let c = image.channels;
    let Pixels::U8(v) = image.pixels else {
        unreachable!("Compose checks the dtype")
    };
    let out: Vec<u8> = match c {
        3 => v,
        1 | 2 => v.chunks_exact(c).flat_map(|p| [p[0], p[0], p[0]]).collect(),
        _ => v.chunks_exact(c).flat_map(|p| [p[0], p[1], p[2]]).collect(),
    };
    Image {
        channels: 3,
        pixels: Pixels::U8(out),
        ..image
    }
}

/// Pillow's luma `(19595 R + 38470 G + 7471 B + 0x8000) >> 16`; gray keeps its value.
pub fn to_gray(image: Image) -> Image {
    let c = image.channels;
    let Pixels::U8(v) = image.pixels else {
        unreachable!("Compose checks the dtype")
    };
    let out: Vec<u8> = match c {
        1 => v,
        2 => v.chunks_exact(2).map(|p| p[0]).collect(),
        _ => v
            .chunks_exact(c)
            .map(|p| {
                let luma = p[0] as u32 * 19595 + p[1] as u32 * 38470 + p[2] as u32 * 7471;
                ((luma + 0x8000) >> 16) as u8
            })
            .collect(),
    };
    Image {
        channels: 1,
        pixels: Pixels::U8(out),
        ..image
    }
}

/// `image.astype(np.float32) / np.float32(255)`.
pub fn to_float(image: Image) -> Image {
    let Pixels::U8(v) = image.pixels else {
        unreachable!("Compose checks the dtype")
    };
    let out = v.iter().map(|&x| x as f32 / 255.0f32).collect();
    Image {
        pixels: Pixels::F32(out),
        ..image
    }
}

/// `(image - mean) / std` in float32, per channel of the current layout.
pub fn normalize(image: Image, mean: &[f32], std: &[f32]) -> Result<Image, String> {
    let c = image.channels;
    for (name, values) in [("mean", mean), ("std", std)] {
        if values.len() != 1 && values.len() != c {
            return Err(format!(
                "Normalize: {name} has {} values for {c} channels",
                values.len()
            ));
        }
    }
    let per_channel =
        |values: &[f32]| -> Vec<f32> { (0..c).map(|i| values[i.min(values.len() - 1)]).collect() };
    let (mean, std) = (per_channel(mean), per_channel(std));
    let Pixels::F32(mut v) = image.pixels else {
        unreachable!("Compose checks the dtype")
    };
    if image.chw {
        let plane = image.height * image.width;
        for ((channel, m), s) in v.chunks_mut(plane.max(1)).zip(&mean).zip(&std) {
            channel.iter_mut().for_each(|x| *x = (*x - m) / s);
        }
    } else {
        // The channels' values repeated over a span of pixels: one flat loop
        // the compiler vectorises, the same arithmetic per value.
        let span = c * 16;
        let repeat = |values: &[f32]| -> Vec<f32> { (0..span).map(|i| values[i % c]).collect() };
        let (mean, std) = (repeat(&mean), repeat(&std));
        for pixels in v.chunks_mut(span) {
            for ((x, m), s) in pixels.iter_mut().zip(&mean).zip(&std) {
                *x = (*x - m) / s;
            }
        }
    }
    Ok(Image {
        pixels: Pixels::F32(v),
        ..image
    })
}

/// Channels first (`to_chw`) or last again, as a contiguous copy.
pub fn relayout(image: Image, chw: bool) -> Image {
    fn moved<T: Copy + Default>(v: &[T], plane: usize, c: usize, chw: bool) -> Vec<T> {
        let mut out = vec![T::default(); v.len()];
        if plane == 0 {
            return out;
        }
        if chw {
            to_planes(v, c, &mut out);
            return out;
        }
        for channel in 0..c {
            let source = &v[channel * plane..(channel + 1) * plane];
            for (p, &x) in source.iter().enumerate() {
                out[p * c + channel] = x;
            }
        }
        out
    }
    let (plane, c) = (image.height * image.width, image.channels);
    let pixels = match image.pixels {
        Pixels::U8(v) => Pixels::U8(moved(&v, plane, c, chw)),
        Pixels::F32(v) => Pixels::F32(moved(&v, plane, c, chw)),
    };
    Image {
        chw,
        pixels,
        ..image
    }
}

/// HWC values `v` of `c` channels as `c` planes in `out` (the same length).
fn to_planes<T: Copy>(v: &[T], c: usize, out: &mut [T]) {
    let plane = v.len() / c;
    for (channel, planar) in out.chunks_exact_mut(plane.max(1)).enumerate().take(c) {
        for (to, pixel) in planar.iter_mut().zip(v.chunks_exact(c)) {
            *to = pixel[channel];
        }
    }
}

/// `relayout(image, true)` of an HWC `image` written into `out`, the CHW
/// image's bytes; false, with nothing written, when `out` does not fit it
/// (its length, or its alignment for float32).
pub fn relayout_chw_into(image: &Image, out: &mut [u8]) -> bool {
    let c = image.channels;
    match &image.pixels {
        Pixels::U8(v) if out.len() == v.len() && c > 0 => to_planes(v, c, out),
        Pixels::F32(v) if c > 0 => {
            // SAFETY: every bit pattern is an f32; align_to_mut keeps alignment.
            let (head, values, tail) = unsafe { out.align_to_mut::<f32>() };
            if !head.is_empty() || !tail.is_empty() || values.len() != v.len() {
                return false;
            }
            to_planes(v, c, values);
        }
        _ => return false,
    }
    true
}

/// torchvision's `RandomResizedCrop.get_params`, with the item's numbers.
pub fn crop_box(
    random: &mut ItemRandom,
    height: usize,
    width: usize,
    scale: (f64, f64),
    ratio: (f64, f64),
) -> (usize, usize, usize, usize) {
    let area = (height * width) as f64;
    let (log_low, log_high) = (ratio.0.ln(), ratio.1.ln());
    for _ in 0..10 {
        let target = area * random.uniform_between(scale.0, scale.1);
        let aspect = random.uniform_between(log_low, log_high).exp();
        let w = (target * aspect).sqrt().round_ties_even() as i64;
        let h = (target / aspect).sqrt().round_ties_even() as i64;
        if 0 < w && w as usize <= width && 0 < h && h as usize <= height {
            let (h, w) = (h as usize, w as usize);
            let top = random.below((height - h + 1) as u64) as usize;
            let left = random.below((width - w + 1) as u64) as usize;
            return (top, left, h, w);
        }
    }
    let in_ratio = width as f64 / height as f64;
    let (h, w) = if in_ratio < ratio.0 {
        ((width as f64 / ratio.0).round_ties_even() as usize, width)
    } else if in_ratio > ratio.1 {
        (height, (height as f64 * ratio.1).round_ties_even() as usize)
    } else {
        (height, width)
    };
    ((height - h) / 2, (width - w) / 2, h, w)
}
