//! A pipeline as the native side holds it, and its run on one item.

use crate::blur;
use crate::color;
use crate::erasing::{self, ErasingValue};
use crate::op::{Op, Size};
use crate::ops;
use crate::point;
use crate::random::ItemRandom;
use crate::random_crop::{self, PadMode};
use crate::resample::{resize, Filter};
use crate::{admit, Fallback, Image, Pixels};

/// What a pipeline starts from.
pub enum Input<'a> {
    Encoded(&'a [u8]),
    Decoded(Image),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub ops: Vec<Op>,
}

pub(crate) fn resample(
    image: Image,
    out_h: usize,
    out_w: usize,
    filter: Filter,
) -> Result<Image, Fallback> {
    if image.height == 0 || image.width == 0 || out_h == 0 || out_w == 0 {
        return Err(Fallback("an empty image".into()));
    }
    if image.channels > 4 {
        return Err(Fallback("more than 4 channels to resample".into()));
    }
    let (h, w, c) = (image.height, image.width, image.channels);
    let pixels = match image.pixels {
        Pixels::U8(v) => Pixels::U8(resize(&v, h, w, c, out_h, out_w, filter)),
        Pixels::F32(v) => Pixels::F32(resize(&v, h, w, c, out_h, out_w, filter)),
    };
    Ok(Image {
        height: out_h,
        width: out_w,
        pixels,
        ..image
    })
}

impl Pipeline {
    /// Whether items draw random numbers (Python's `Op.random`); every op is
    /// named so that a new one must say.
    pub fn random(&self) -> bool {
        self.ops.iter().any(|op| match op {
            Op::RandomResizedCrop { .. }
            | Op::RandomCrop { .. }
            | Op::RandomErasing { .. }
            | Op::ColorJitter(_)
            | Op::RandomApply { .. }
            | Op::RandomChoice { .. }
            | Op::RandomOrder { .. }
            | Op::Point(_)
            | Op::GaussianBlur { .. }
            | Op::RandomHFlip { .. }
            | Op::RandomVFlip { .. } => true,
            Op::Decode { .. }
            | Op::Adjust(_)
            | Op::ToRgb
            | Op::ToGray
            | Op::Crop { .. }
            | Op::CenterCrop { .. }
            | Op::Resize { .. }
            | Op::Pad { .. }
            | Op::PadTo { .. }
            | Op::HFlip
            | Op::VFlip
            | Op::Rotate90 { .. }
            | Op::ToFloat
            | Op::Normalize { .. }
            | Op::ToChw
            | Op::ToHwc => false,
        })
    }

    /// The item's image through every op; `index_word` keys its random numbers.
    pub fn run(
        &self,
        input: Input<'_>,
        epoch_seed: u64,
        index_word: u64,
    ) -> Result<Image, Fallback> {
        let made = self.run_into(input, epoch_seed, index_word, |_| None)?;
        Ok(made.expect("written into a slot only when one is given"))
    }

    /// As `run`, but when the last op is `ToChw` on an HWC image and `slot`
    /// gives bytes for its result (it sees the HWC image), the op writes the
    /// CHW image straight into them: `Ok(None)` then.
    pub fn run_into<'s>(
        &self,
        input: Input<'_>,
        epoch_seed: u64,
        index_word: u64,
        slot: impl FnOnce(&Image) -> Option<&'s mut [u8]>,
    ) -> Result<Option<Image>, Fallback> {
        let mut random = ItemRandom::new(epoch_seed, index_word);
        let mut ops = self.ops.iter();
        let mut image = match input {
            Input::Decoded(image) => image,
            Input::Encoded(data) => match ops.next() {
                Some(&Op::Decode { max_pixels, draft }) => {
                    let decode = (max_pixels, draft);
                    let (image, done) =
                        self.decode_first(data, decode, ops.as_slice(), &mut random)?;
                    if done > 0 {
                        ops.nth(done - 1);
                    }
                    image
                }
                _ => return Err(Fallback("encoded bytes without Decode".into())),
            },
        };
        let (ops, last) = match ops.as_slice().split_last() {
            Some((Op::ToChw, rest)) => (rest, Some(&Op::ToChw)),
            _ => (ops.as_slice(), None),
        };
        for op in ops {
            image = self.apply(op, image, &mut random)?;
        }
        let Some(last) = last else {
            return Ok(Some(image));
        };
        if !image.chw && image.channels > 0 {
            if let Some(bytes) = slot(&image) {
                if ops::relayout_chw_into(&image, bytes) {
                    return Ok(None);
                }
            }
        }
        self.apply(last, image, &mut random).map(Some)
    }

    pub(crate) fn apply(
        &self,
        op: &Op,
        image: Image,
        random: &mut ItemRandom,
    ) -> Result<Image, Fallback> {
        // What the reference takes but these ops do not: the item goes to the
        // reference, whose result or error the user gets (never a panic).
        if image.channels == 0 {
            return Err(Fallback("an image without channels".into()));
        }
        let wants_u8 = matches!(op, Op::ToRgb | Op::ToGray | Op::ToFloat);
        let wants_f32 = matches!(op, Op::Normalize { .. } | Op::RandomErasing { .. });
        match image.pixels {
            Pixels::F32(_) if wants_u8 => return Err(Fallback("a float32 image".into())),
            Pixels::U8(_) if wants_f32 => return Err(Fallback("a uint8 image".into())),
            _ => {}
        }
        let (h, w, c) = (image.height, image.width, image.channels);
        let element = match image.pixels {
            Pixels::U8(_) => 1,
            Pixels::F32(_) => 4,
        };
        // An op that makes a larger image checks it first (`MAX_IMAGE_BYTES`).
        let fits = |height: usize, width: usize| admit(height, width, c, element);
        Ok(match *op {
            Op::Decode { .. } => return Err(Fallback("Decode after the first op".into())),
            Op::ToRgb => ops::to_rgb(image),
            Op::ToGray => ops::to_gray(image),
            Op::Crop {
                top,
                left,
                height,
                width,
            } => {
                if top + height > image.height || left + width > image.width {
                    return Err(Fallback("a crop that does not fit".into()));
                }
                ops::crop(image, top, left, height, width)
            }
            Op::CenterCrop { height, width } => {
                fits(height.max(h), width.max(w))?;
                ops::center_crop(image, height, width)
            }
            Op::Resize { size, filter } => {
                let (out_h, out_w) = match size {
                    Size::Exact(h, w) => (h, w),
                    Size::Shorter(s) if image.width <= image.height => {
                        (((s * image.height) as f64 / image.width as f64) as usize, s)
                    }
                    Size::Shorter(s) => {
                        (s, ((s * image.width) as f64 / image.height as f64) as usize)
                    }
                };
                fits(out_h, out_w)?;
                resample(image, out_h, out_w, filter)?
            }
            Op::RandomResizedCrop {
                height,
                width,
                scale,
                ratio,
                filter,
            } => {
                fits(height, width)?;
                let (top, left, h, w) =
                    ops::crop_box(random, image.height, image.width, scale, ratio);
                resample(ops::crop(image, top, left, h, w), height, width, filter)?
            }
            Op::Pad {
                top,
                bottom,
                left,
                right,
                value,
            } => {
                fits(h + top + bottom, w + left + right)?;
                ops::pad(image, top, bottom, left, right, value)
            }
            Op::PadTo {
                height,
                width,
                value,
            } => {
                if image.height > height || image.width > width {
                    return Err(Fallback("an image larger than PadTo".into()));
                }
                fits(height, width)?;
                let (bottom, right) = (height - image.height, width - image.width);
                ops::pad(image, 0, bottom, 0, right, value)
            }
            Op::RandomCrop {
                height,
                width,
                padding,
                pad_if_needed,
                fill,
                mode,
            } => {
                // The reference pads the whole image first (`random_crop_box`'s
                // sizes): refused as it would be, however small the crop.
                let padded = |side: usize, extra: usize, want: usize| match side + extra {
                    short if pad_if_needed && short < want => short + 2 * (want - short),
                    enough => enough.max(want),
                };
                fits(
                    padded(h, padding[1] + padding[3], height),
                    padded(w, padding[0] + padding[2], width),
                )?;
                let size = (height, width);
                if (h == 0 || w == 0) && mode != PadMode::Constant {
                    return Err(Fallback("an empty image to pad from its edges".into()));
                }
                let Some((padding, top, left)) =
                    random_crop::random_crop_box(random, h, w, size, padding, pad_if_needed)
                else {
                    return Err(Fallback("a crop larger than the padded image".into()));
                };
                let origin = (padding[1], padding[0]);
                random_crop::pad_crop(image, origin, (top, left), size, mode, fill)
            }
            Op::RandomErasing {
                p,
                scale,
                ratio,
                ref value,
            } => {
                let fits = match value {
                    ErasingValue::Fill(fill) => fill.len() == 1 || fill.len() == image.channels,
                    ErasingValue::Random => true,
                };
                if !image.chw || !fits {
                    return Err(Fallback(
                        "RandomErasing on an image it does not take".into(),
                    ));
                }
                erasing::random_erasing(image, random, p, scale, ratio, value)
            }
            Op::ColorJitter(ref jitter) => color::color_jitter(image, random, jitter)?,
            Op::RandomApply { p, ref ops } if random.uniform() < p => ops
                .iter()
                .try_fold(image, |image, op| self.apply(op, image, random))?,
            Op::RandomApply { .. } => image,
            Op::RandomChoice { ref p, ref ops } => {
                let chosen = choose(p, random.uniform());
                self.apply(&ops[chosen], image, random)?
            }
            Op::RandomOrder { ref ops } => shuffled(ops.len(), random)
                .into_iter()
                .try_fold(image, |image, at| self.apply(&ops[at], image, random))?,
            Op::Point(ref op) => point::apply(op, image, random)?,
            Op::Adjust(adjust) => color::adjust(image, adjust)?,
            Op::GaussianBlur { kernel_size, sigma } => {
                blur::gaussian_blur(image, random, kernel_size, sigma)?
            }
            Op::HFlip => ops::flip(image, true),
            Op::VFlip => ops::flip(image, false),
            Op::RandomHFlip { p } => {
                if random.uniform() < p {
                    ops::flip(image, true)
                } else {
                    image
                }
            }
            Op::RandomVFlip { p } => {
                if random.uniform() < p {
                    ops::flip(image, false)
                } else {
                    image
                }
            }
            Op::Rotate90 { k } => ops::rotate90(image, k),
            Op::ToFloat => {
                admit(h, w, c, 4)?;
                ops::to_float(image)
            }
            Op::Normalize { ref mean, ref std } => {
                ops::normalize(image, mean, std).map_err(Fallback)?
            }
            Op::ToChw => ops::relayout(image, true),
            Op::ToHwc => ops::relayout(image, false),
        })
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;

/// The op a uniform draw picks: the first whose running sum of weights exceeds
/// it, else (a sum a rounding short of 1) the last with a weight, as
/// `RandomChoice.choose` in Python, sum for sum.
fn choose(weights: &[f64], uniform: f64) -> usize {
    let mut running = 0.0;
    for (position, weight) in weights.iter().enumerate() {
        running += weight;
        if uniform < running {
            return position;
        }
    }
    weights
        .iter()
        .rposition(|&weight| weight > 0.0)
        .unwrap_or(0)
}

/// `0..n` shuffled as `RandomOrder.order` shuffles it: from the last position
/// down, each swapped with one drawn at or below it.
fn shuffled(n: usize, random: &mut ItemRandom) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for last in (1..n).rev() {
        let other = random.below(last as u64 + 1) as usize;
        order.swap(last, other);
    }
    order
}
