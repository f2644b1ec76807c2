//! torchvision's `ColorJitter` on PIL's arithmetic, ported: `Image.blend` in
//! `f32` for brightness, contrast and saturation (`ImageEnhance`), Pillow's
//! `rgb2hsv`/`hsv2rgb` (their mix of `f32` and `f64`) for hue.

use crate::random::ItemRandom;
use crate::{Fallback, Image, Pixels};

/// The factor ranges that are on (`None`: off, nothing drawn).
#[derive(Clone, Debug, PartialEq)]
pub struct Jitter {
    pub brightness: Option<(f64, f64)>,
    pub contrast: Option<(f64, f64)>,
    pub saturation: Option<(f64, f64)>,
    pub hue: Option<(f64, f64)>,
}

pub fn color_jitter(
    image: Image,
    random: &mut ItemRandom,
    jitter: &Jitter,
) -> Result<Image, Fallback> {
    let c = image.channels;
    let Pixels::U8(mut v) = image.pixels else {
        return Err(Fallback("ColorJitter on a float32 image".into()));
    };
    if c != 1 && c != 3 {
        return Err(Fallback(
            "ColorJitter on an image of 2 or 4 channels".into(),
        ));
    }
    // `jitter_params`: torchvision's randperm(4) as a shuffle, then the factors.
    let mut order = [0usize, 1, 2, 3];
    for i in (1..4).rev() {
        let j = random.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let ranges = [
        jitter.brightness,
        jitter.contrast,
        jitter.saturation,
        jitter.hue,
    ];
    let factors = ranges.map(|r| r.map(|(low, high)| random.uniform_between(low, high)));
    for step in order {
        let Some(factor) = factors[step] else {
            continue;
        };
        v = match step {
            0 => blend(&vec![0; v.len()], &v, factor as f32),
            1 => {
                let mean = mean_luma(&v, c);
                blend(&vec![mean; v.len()], &v, factor as f32)
            }
            2 if c == 3 => blend(&gray_as_rgb(&v), &v, factor as f32),
            3 if c == 3 => shift_hue(v, factor),
            _ => v, // saturation and hue leave a gray image as it is
        };
    }
    Ok(Image {
        pixels: Pixels::U8(v),
        ..image
    })
}

/// Pillow's `ImagingBlend(degenerate, image, alpha)`.
fn blend(degenerate: &[u8], image: &[u8], alpha: f32) -> Vec<u8> {
    if alpha == 0.0 {
        return degenerate.to_vec();
    }
    if alpha == 1.0 {
        return image.to_vec();
    }
    let inside = (0.0..=1.0).contains(&alpha);
    degenerate
        .iter()
        .zip(image)
        .map(|(&a, &b)| {
            let value = a as i32 as f32 + alpha * (b as i32 - a as i32) as f32;
            if inside {
                value as u8
            } else if value <= 0.0 {
                0
            } else if value >= 255.0 {
                255
            } else {
                value as u8
            }
        })
        .collect()
}

fn luma(p: &[u8]) -> u8 {
    ((p[0] as u32 * 19595 + p[1] as u32 * 38470 + p[2] as u32 * 7471 + 0x8000) >> 16) as u8
}

/// `ImageEnhance.Contrast`'s gray level: `int(mean of the L image + 0.5)`.
fn mean_luma(v: &[u8], c: usize) -> u8 {
    let count = v.len() / c;
    if count == 0 {
        return 0;
    }
    let total: u64 = if c == 1 {
        v.iter().map(|&x| x as u64).sum()
    } else {
        v.chunks_exact(3).map(|p| luma(p) as u64).sum()
    };
    (total as f64 / count as f64 + 0.5) as u8
}

fn gray_as_rgb(v: &[u8]) -> Vec<u8> {
    v.chunks_exact(3).flat_map(|p| [luma(p); 3]).collect()
}

/// torchvision's `adjust_hue` on PIL: H of PIL's HSV plus `int(factor * 255)`, wrapping.
fn shift_hue(mut v: Vec<u8>, factor: f64) -> Vec<u8> {
    let shift = ((factor * 255.0) as i64).rem_euclid(256) as u8;
    for pixel in v.chunks_exact_mut(3) {
        let [h, s, value] = rgb_to_hsv(pixel[0], pixel[1], pixel[2]);
        pixel.copy_from_slice(&hsv_to_rgb(h.wrapping_add(shift), s, value));
    }
    v
}

fn clip8(value: i64) -> u8 {
    value.clamp(0, 255) as u8
}

/// Pillow's `rgb2hsv_row`: `f32` variables, `f64` constants.
fn rgb_to_hsv(r: u8, g: u8, b: u8) -> [u8; 3] {
    let (maxc, minc) = (r.max(g).max(b), r.min(g).min(b));
    if minc == maxc {
        return [0, 0, maxc];
    }
    let cr = (maxc - minc) as f32;
    let s = cr / maxc as f32;
    let rc = (maxc - r) as f32 / cr;
    let gc = (maxc - g) as f32 / cr;
    let bc = (maxc - b) as f32 / cr;
    let h: f32 = if r == maxc {
        bc - gc
    } else if g == maxc {
        (2.0 + rc as f64 - bc as f64) as f32
    } else {
        (4.0 + gc as f64 - rc as f64) as f32
    };
    let h = ((h as f64 / 6.0 + 1.0) % 1.0) as f32;
    [
        clip8((h as f64 * 255.0) as i64),
        clip8((s as f64 * 255.0) as i64),
        maxc,
    ]
}

/// Pillow's `hsv2rgb`, C's `round` being half away from zero.
fn hsv_to_rgb(h: u8, s: u8, v: u8) -> [u8; 3] {
    if s == 0 {
        return [v, v, v];
    }
    let sector = (h as f32 as f64 * 6.0 / 255.0).floor() as i64;
    let f = (h as f32 as f64 * 6.0 / 255.0 - sector as f32 as f64) as f32;
    let fs = (s as f32 as f64 / 255.0) as f32;
    let vf = v as f32 as f64;
    let p = clip8((vf * (1.0 - fs as f64)).round() as i64);
    let q = clip8((vf * (1.0 - (fs * f) as f64)).round() as i64);
    let t = clip8((vf * (1.0 - fs as f64 * (1.0 - f as f64))).round() as i64);
    match sector % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}
