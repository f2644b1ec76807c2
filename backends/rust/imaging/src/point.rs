//! The per-pixel ops on `uint8` images drawn with a probability
//! (`transforms/_op_apply.py`), each equal to its reference in `_point.py`:
//! one uniform number per item, the op applied when it is below `p`.

use crate::ops;
use crate::random::ItemRandom;
use crate::{Fallback, Image, Pixels};

#[derive(Clone, Debug, PartialEq)]
pub enum Point {
    /// Pillow's luma, with the channels the image had (torchvision's `RandomGrayscale`)
    RandomGrayscale { p: f64 },
    /// `255 - v` where `v >= threshold` (PIL's `ImageOps.solarize`)
    RandomSolarize { threshold: f64, p: f64 },
}

/// `image` through `point`; an image of other than 1 or 3 channels, or not
/// `uint8`, goes to the reference (which refuses it by name).
pub fn apply(point: &Point, image: Image, random: &mut ItemRandom) -> Result<Image, Fallback> {
    if !matches!(image.channels, 1 | 3) || !matches!(image.pixels, Pixels::U8(_)) {
        return Err(Fallback(format!("{point:?} on an image it does not take")));
    }
    Ok(match *point {
        Point::RandomGrayscale { p } => {
            if random.uniform() >= p || image.channels == 1 {
                return Ok(image);
            }
            let gray = ops::to_gray(image);
            let Pixels::U8(ref v) = gray.pixels else {
                unreachable!("to_gray gives uint8")
            };
            let rgb = v.iter().flat_map(|&g| [g, g, g]).collect();
            Image {
                channels: 3,
                pixels: Pixels::U8(rgb),
                ..gray
            }
        }
        Point::RandomSolarize { threshold, p } => {
            if random.uniform() >= p {
                return Ok(image);
            }
            let table: [u8; 256] = std::array::from_fn(|i| {
                if (i as f64) < threshold {
                    i as u8
                } else {
                    255 - i as u8
                }
            });
            lookup(image, &table)
        }
    })
}

/// `table[image]`: each value through a 256-entry table.
fn lookup(image: Image, table: &[u8; 256]) -> Image {
    let Pixels::U8(mut v) = image.pixels else {
        unreachable!("checked by `apply`")
    };
    for value in v.iter_mut() {
        *value = table[*value as usize];
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
    }
}
