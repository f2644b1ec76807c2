//! torchvision's `ColorJitter` on PIL's arithmetic, ported: `Image.blend` in
//! `f32` for brightness, contrast and saturation (`ImageEnhance`), Pillow's
//! `rgb2hsv`/`hsv2rgb` (their mix of `f32` and `f64`) for hue.

use std::sync::OnceLock;

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
        if let Some(factor) = factors[step] {
            v = enhance(v, c, step, factor);
        }
    }
    Ok(Image {
        pixels: Pixels::U8(v),
        ..image
    })
}

/// One adjustment with a fixed factor (`AdjustBrightness` ... `AdjustHue`):
/// `step` is its place in ColorJitter's (brightness 0, contrast 1, saturation
/// 2, hue 3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adjust {
    pub step: usize,
    pub factor: f64,
}

pub fn adjust(image: Image, adjust: Adjust) -> Result<Image, Fallback> {
    let c = image.channels;
    let Pixels::U8(v) = image.pixels else {
        return Err(Fallback("an adjustment on a float32 image".into()));
    };
    if c != 1 && c != 3 {
        return Err(Fallback("an adjustment on 2 or 4 channels".into()));
    }
    Ok(Image {
        pixels: Pixels::U8(enhance(v, c, adjust.step, adjust.factor)),
        ..image
    })
}

/// `ImageEnhance`'s brightness, contrast, saturation, or the hue shift.
fn enhance(v: Vec<u8>, c: usize, step: usize, factor: f64) -> Vec<u8> {
    match step {
        0 => blend(&vec![0; v.len()], &v, factor as f32),
        1 => {
            let mean = mean_luma(&v, c);
            blend(&vec![mean; v.len()], &v, factor as f32)
        }
        2 if c == 3 => blend(&gray_as_rgb(&v), &v, factor as f32),
        3 if c == 3 => shift_hue(v, factor),
        _ => v, // saturation and hue leave a gray image as it is
    }
}

/// Pillow's `ImagingBlend(degenerate, image, alpha)`.
pub(crate) fn blend(degenerate: &[u8], image: &[u8], alpha: f32) -> Vec<u8> {
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
    let tables = tables();
    for pixel in v.chunks_exact_mut(3) {
        let [h, s, value] = rgb_to_hsv(tables, pixel[0], pixel[1], pixel[2]);
        pixel.copy_from_slice(&hsv_to_rgb(tables, h.wrapping_add(shift), s, value));
    }
    v
}

/// C's `round` (half away from zero) of an `x >= 0`: `x - trunc(x)` is exact.
fn round_up(x: f64) -> i64 {
    let whole = x as i64;
    whole + (x - whole as f64 >= 0.5) as i64
}

fn clip8(value: i64) -> u8 {
    value.clamp(0, 255) as u8
}

/// Pillow's `rgb2hsv_row`: `f32` variables, `f64` constants. Its divisions
/// come from tables of every `u8` operand pair, made once (`Tables`).
fn rgb_to_hsv(tables: &Tables, r: u8, g: u8, b: u8) -> [u8; 3] {
    let (maxc, minc) = (r.max(g).max(b), r.min(g).min(b));
    if minc == maxc {
        return [0, 0, maxc];
    }
    let cr = maxc - minc;
    let ratio = |x: u8| tables.ratio[(maxc - x) as usize * 256 + cr as usize];
    let (rc, gc, bc) = (ratio(r), ratio(g), ratio(b));
    let h: f32 = if r == maxc {
        bc - gc
    } else if g == maxc {
        (2.0 + rc as f64 - bc as f64) as f32
    } else {
        (4.0 + gc as f64 - rc as f64) as f32
    };
    // fmod(x, 1.0) for x in [5/6, 2): exact as a subtraction (Sterbenz), no libm call.
    let x = h as f64 / 6.0 + 1.0;
    let h = (if x >= 1.0 { x - 1.0 } else { x }) as f32;
    [
        clip8((h as f64 * 255.0) as i64),
        tables.saturation[cr as usize * 256 + maxc as usize],
        maxc,
    ]
}

/// Pillow's quotients of `u8` operands, computed once per process: `ratio[d *
/// 256 + cr]` is `(float)d / (float)cr`, `saturation[cr * 256 + maxc]` is
/// `CLIP8((int)((cr / (float)maxc) * 255.0))`, and for `hsv2rgb` each hue's
/// sector and remainder and each saturation's `s / 255.0`.
struct Tables {
    ratio: Vec<f32>,
    saturation: Vec<u8>,
    sector: [(i64, f32); 256],
    fs: [f32; 256],
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut ratio = vec![0.0f32; 256 * 256];
        let mut saturation = vec![0u8; 256 * 256];
        for a in 0..256usize {
            for b in 1..256usize {
                ratio[a * 256 + b] = a as f32 / b as f32;
                let s = a as f32 / b as f32;
                saturation[a * 256 + b] = clip8((s as f64 * 255.0) as i64);
            }
        }
        let mut sector = [(0i64, 0.0f32); 256];
        let mut fs = [0.0f32; 256];
        for h in 0..256usize {
            let whole = (h as f32 as f64 * 6.0 / 255.0).floor() as i64;
            let f = (h as f32 as f64 * 6.0 / 255.0 - whole as f32 as f64) as f32;
            sector[h] = (whole, f);
            fs[h] = (h as f32 as f64 / 255.0) as f32;
        }
        Tables {
            ratio,
            saturation,
            sector,
            fs,
        }
    })
}

/// Pillow's `hsv2rgb`, C's `round` being half away from zero.
fn hsv_to_rgb(tables: &Tables, h: u8, s: u8, v: u8) -> [u8; 3] {
    if s == 0 {
        return [v, v, v];
    }
    // Every value below is >= 0, where `round_up` is C's round without the
    // libm call Rust makes without SSE4.1.
    let (sector, f) = tables.sector[h as usize];
    let fs = tables.fs[s as usize];
    let vf = v as f32 as f64;
    let p = clip8(round_up(vf * (1.0 - fs as f64)));
    let q = clip8(round_up(vf * (1.0 - (fs * f) as f64)));
    let t = clip8(round_up(vf * (1.0 - fs as f64 * (1.0 - f as f64))));
    // The sector's channel order as indices into [v, p, q, t]: no branch to
    // mispredict on a noisy image.
    const ORDER: [[usize; 3]; 6] = [
        [0, 3, 1],
        [2, 0, 1],
        [1, 0, 3],
        [1, 2, 0],
        [3, 1, 0],
        [0, 1, 2],
    ];
    let values = [v, p, q, t];
    let [a, b, c] = ORDER[(sector % 6) as usize];
    [values[a], values[b], values[c]]
}

/// Pillow's `ImageEnhance.Sharpness(image).enhance(factor)`: `blend` with the
/// image through the 3x3 `SMOOTH` kernel (`ImagingFilter3x3`: 1/13 around, 5/13
/// in the middle as `f32`, each row's three taps summed in order onto 0.5,
/// truncated, the border pixels kept; an image under 3x3 kept whole).
pub fn sharpen(v: &[u8], height: usize, width: usize, c: usize, factor: f64) -> Vec<u8> {
    let mut smooth = v.to_vec();
    if height >= 3 && width >= 3 {
        let (side, middle) = ((1.0f64 / 13.0) as f32, (5.0f64 / 13.0) as f32);
        let at = |y: usize, x: usize, ch: usize| v[(y * width + x) * c + ch] as f32;
        for y in 1..height - 1 {
            for x in 1..width - 1 {
                for ch in 0..c {
                    let row = |y: usize, k: f32| {
                        at(y, x - 1, ch) * side + at(y, x, ch) * k + at(y, x + 1, ch) * side
                    };
                    let mut sum = 0.5f32;
                    sum += row(y + 1, side);
                    sum += row(y, middle);
                    sum += row(y - 1, side);
                    smooth[(y * width + x) * c + ch] = sum.clamp(0.0, 255.0) as u8;
                }
            }
        }
    }
    blend(&smooth, v, factor as f32)
}
