//! torchvision's `RandomErasing` on a float CHW image, with the item's numbers
//! drawn in its order: apply or not, then up to ten boxes, the noise, the place.

use crate::random::ItemRandom;
use crate::{Image, Pixels};

/// What an erased box is set to.
#[derive(Clone, Debug, PartialEq)]
pub enum ErasingValue {
    /// One number for every channel, or one per channel.
    Fill(Vec<f32>),
    /// Standard normal noise, one draw per erased value in CHW order.
    Random,
}

/// The image with its box erased, or as it was (`p` not drawn, or no box fit).
/// A float32 CHW image whose fill has 1 or C numbers; the caller checks.
pub fn random_erasing(
    image: Image,
    random: &mut ItemRandom,
    p: f64,
    scale: (f64, f64),
    ratio: (f64, f64),
    value: &ErasingValue,
) -> Image {
    let (c, height, width) = (image.channels, image.height, image.width);
    if random.uniform() >= p {
        return image;
    }
    let (log_low, log_high) = (ratio.0.ln(), ratio.1.ln());
    for _ in 0..10 {
        let area = (height * width) as f64 * random.uniform_between(scale.0, scale.1);
        let aspect = random.uniform_between(log_low, log_high).exp();
        let h = (area * aspect).sqrt().round_ties_even() as usize;
        let w = (area / aspect).sqrt().round_ties_even() as usize;
        if !(h < height && w < width) {
            continue;
        }
        let noise: Vec<f32> = match value {
            ErasingValue::Random => (0..c * h * w).map(|_| random.normal() as f32).collect(),
            ErasingValue::Fill(_) => Vec::new(),
        };
        let top = random.below((height - h + 1) as u64) as usize;
        let left = random.below((width - w + 1) as u64) as usize;
        let Pixels::F32(mut v) = image.pixels else {
            unreachable!("random_erasing takes float32 images")
        };
        for channel in 0..c {
            for y in 0..h {
                let row = (channel * height + top + y) * width + left;
                let out = &mut v[row..row + w];
                match value {
                    ErasingValue::Random => {
                        let from = (channel * h + y) * w;
                        out.copy_from_slice(&noise[from..from + w]);
                    }
                    ErasingValue::Fill(fill) => out.fill(fill[channel.min(fill.len() - 1)]),
                }
            }
        }
        return Image {
            pixels: Pixels::F32(v),
            ..image
        };
    }
    image
}
