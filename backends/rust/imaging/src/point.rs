//! The per-pixel ops on `uint8` images drawn with a probability
//! (`transforms/_op_apply.py`), each equal to its reference in `_point.py`:
//! one uniform number per item, the op applied when it is below `p`; all but
//! the grayscale are a table per channel, as PIL's `ImageOps` makes it.

use crate::color;
use crate::ops;
use crate::random::ItemRandom;
use crate::{Fallback, Image, Pixels};

#[derive(Clone, Debug, PartialEq)]
pub enum Point {
    /// Pillow's luma, with the channels the image had (torchvision's `RandomGrayscale`)
    RandomGrayscale { p: f64 },
    /// `255 - v` where `v >= threshold` (PIL's `ImageOps.solarize`)
    RandomSolarize { threshold: f64, p: f64 },
    /// the `bits` high bits kept (`ImageOps.posterize`)
    RandomPosterize { bits: u32, p: f64 },
    /// each channel stretched to 0..255 (`ImageOps.autocontrast`)
    RandomAutocontrast { p: f64 },
    /// each channel's histogram equalized (`ImageOps.equalize`)
    RandomEqualize { p: f64 },
    /// a blend with the smoothed image (`ImageEnhance.Sharpness`)
    RandomAdjustSharpness { factor: f64, p: f64 },
}

impl Point {
    fn p(&self) -> f64 {
        match *self {
            Point::RandomGrayscale { p }
            | Point::RandomSolarize { p, .. }
            | Point::RandomPosterize { p, .. }
            | Point::RandomAutocontrast { p }
            | Point::RandomEqualize { p }
            | Point::RandomAdjustSharpness { p, .. } => p,
        }
    }

    /// The table of a channel whose histogram is `h`.
    fn table(&self, h: &[u64; 256]) -> [u8; 256] {
        let identity = std::array::from_fn(|i| i as u8);
        match *self {
            Point::RandomGrayscale { .. } | Point::RandomAdjustSharpness { .. } => identity,
            Point::RandomSolarize { threshold, .. } => std::array::from_fn(|i| {
                if (i as f64) < threshold {
                    i as u8
                } else {
                    255 - i as u8
                }
            }),
            Point::RandomPosterize { bits, .. } => {
                let mask = !((1u32 << (8 - bits)) - 1) as u8;
                std::array::from_fn(|i| i as u8 & mask)
            }
            Point::RandomAutocontrast { .. } => {
                let lo = (0..256).find(|&i| h[i] > 0).unwrap_or(255);
                let hi = (0..256).rev().find(|&i| h[i] > 0).unwrap_or(0);
                if hi <= lo {
                    return identity;
                }
                let scale = 255.0 / (hi - lo) as f64;
                let offset = -(lo as f64) * scale;
                // Python's int(): toward zero, then clipped
                std::array::from_fn(|i| ((i as f64 * scale + offset) as i64).clamp(0, 255) as u8)
            }
            Point::RandomEqualize { .. } => {
                let last = h.iter().rev().find(|&&n| n > 0).copied().unwrap_or(0);
                let used = h.iter().filter(|&&n| n > 0).count();
                let step = if used > 1 {
                    (h.iter().sum::<u64>() - last) / 255
                } else {
                    0
                };
                if step == 0 {
                    return identity;
                }
                let mut n = step / 2;
                std::array::from_fn(|i| {
                    let value = (n / step).min(255) as u8; // PIL's point() clips
                    n += h[i];
                    value
                })
            }
        }
    }
}

/// `image` through `point`; an image of other than 1 or 3 channels, or not
/// `uint8`, goes to the reference (which refuses it by name).
pub fn apply(point: &Point, image: Image, random: &mut ItemRandom) -> Result<Image, Fallback> {
    if !matches!(image.channels, 1 | 3) || !matches!(image.pixels, Pixels::U8(_)) {
        return Err(Fallback(format!("{point:?} on an image it does not take")));
    }
    if random.uniform() >= point.p() {
        return Ok(image);
    }
    if let Point::RandomAdjustSharpness { factor, .. } = *point {
        let (h, w, c) = (image.height, image.width, image.channels);
        let Pixels::U8(ref v) = image.pixels else {
            unreachable!("checked above")
        };
        let pixels = Pixels::U8(color::sharpen(v, h, w, c, factor));
        return Ok(Image { pixels, ..image });
    }
    if let Point::RandomGrayscale { .. } = point {
        if image.channels == 1 {
            return Ok(image);
        }
        let gray = ops::to_gray(image);
        let Pixels::U8(ref v) = gray.pixels else {
            unreachable!("to_gray gives uint8")
        };
        let rgb = v.iter().flat_map(|&g| [g, g, g]).collect();
        return Ok(Image {
            channels: 3,
            pixels: Pixels::U8(rgb),
            ..gray
        });
    }
    Ok(lookup(image, point))
}

/// Each channel through its table (`ImageOps._lut`).
fn lookup(image: Image, point: &Point) -> Image {
    let c = image.channels;
    let Pixels::U8(mut v) = image.pixels else {
        unreachable!("checked by `apply`")
    };
    for channel in 0..c {
        let mut histogram = [0u64; 256];
        for &value in v.iter().skip(channel).step_by(c) {
            histogram[value as usize] += 1;
        }
        let table = point.table(&histogram);
        for value in v.iter_mut().skip(channel).step_by(c) {
            *value = table[*value as usize];
        }
    }
    Image {
        pixels: Pixels::U8(v),
        ..image
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(values: Vec<u8>, channels: usize) -> Image {
        Image::u8(1, values.len() / channels, channels, values)
    }

    #[test]
    fn solarize_inverts_from_the_threshold_on_and_grayscale_keeps_three_channels() {
        let mut random = ItemRandom::new(0, 0);
        let solarize = Point::RandomSolarize {
            threshold: 128.0,
            p: 1.0,
        };
        let out = apply(&solarize, image(vec![0, 127, 128, 255], 1), &mut random).unwrap();
        assert_eq!(out.pixels, Pixels::U8(vec![0, 127, 127, 0]));
        let gray = Point::RandomGrayscale { p: 1.0 };
        let out = apply(&gray, image(vec![255, 0, 0, 0, 0, 255], 3), &mut random).unwrap();
        assert_eq!(out.pixels, Pixels::U8(vec![76, 76, 76, 29, 29, 29]));
        let never = Point::RandomGrayscale { p: 0.0 };
        let rgb = image(vec![1, 2, 3], 3);
        assert_eq!(apply(&never, rgb.clone(), &mut random).unwrap(), rgb);
        assert!(apply(&gray, image(vec![1, 2, 3, 4], 4), &mut random).is_err());
        let posterize = Point::RandomPosterize { bits: 2, p: 1.0 };
        let out = apply(&posterize, image(vec![0, 63, 64, 255], 1), &mut random).unwrap();
        assert_eq!(out.pixels, Pixels::U8(vec![0, 0, 64, 192]));
        let stretch = Point::RandomAutocontrast { p: 1.0 };
        let out = apply(&stretch, image(vec![10, 20, 30], 1), &mut random).unwrap();
        assert_eq!(out.pixels, Pixels::U8(vec![0, 127, 255]));
    }
}
