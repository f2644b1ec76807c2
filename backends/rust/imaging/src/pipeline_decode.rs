//! `Decode` fused with the first crop after it: a JPEG decodes only the part
//! of the image the crop keeps (`jpeg.rs`), with the same pixels; with
//! `Decode(draft=True)`, a RandomResizedCrop's JPEG at a reduced DCT scale.

use crate::decode::{decode, decode_cropped};
use crate::jpeg::Region;
use crate::op::Op;
use crate::ops;
use crate::pipeline::{resample, Pipeline};
use crate::random::ItemRandom;
use crate::{Fallback, Image};

impl Pipeline {
    /// `Decode`, and with it the first crop after it (past ops that act on
    /// each pixel alone, which it commutes with): a JPEG then decodes only
    /// the part holding the crop's box, with the pixels a full decode has
    /// there. Returns the image and how many of the ops after `Decode` it ran.
    pub(crate) fn decode_first(
        &self,
        data: &[u8],
        (max_pixels, draft): (u64, bool),
        after: &[Op],
        random: &mut ItemRandom,
    ) -> Result<(Image, usize), Fallback> {
        let per_pixel = after
            .iter()
            .take_while(|op| matches!(op, Op::ToRgb | Op::ToGray))
            .count();
        let crop = after.get(per_pixel).filter(|op| {
            matches!(
                op,
                Op::Crop { .. } | Op::CenterCrop { .. } | Op::RandomResizedCrop { .. }
            )
        });
        let Some(crop) = crop else {
            return Ok((decode(data, max_pixels)?, 0));
        };
        let region = |height: usize, width: usize, scalable: bool| {
            let (top, left, h, w) = match *crop {
                Op::Crop {
                    top,
                    left,
                    height: h,
                    width: w,
                } => (top, left, h, w),
                Op::CenterCrop {
                    height: h,
                    width: w,
                } if h <= height && w <= width => {
                    let (top, left) = ops::center_origin(height, width, h, w);
                    (top, left, h, w)
                }
                Op::RandomResizedCrop { scale, ratio, .. } => {
                    ops::crop_box(random, height, width, scale, ratio)
                }
                _ => return None,
            };
            let scale = match *crop {
                Op::RandomResizedCrop {
                    height: out_h,
                    width: out_w,
                    ..
                } if draft && scalable => dct_scale((h, w), (out_h, out_w)),
                _ => 1,
            };
            Some(Region {
                top: top / scale,
                left: left / scale,
                height: h / scale,
                width: w / scale,
                scale,
            })
        };
        let (mut image, cropped) = decode_cropped(data, max_pixels, region)?;
        let is_rrc = matches!(crop, Op::RandomResizedCrop { .. });
        if cropped.is_none() && is_rrc {
            // An empty box, drawn already: the item goes to the reference.
            return Err(Fallback("an empty image".into()));
        }
        for op in &after[..per_pixel] {
            image = self.apply(op, image, random)?;
        }
        match (crop, cropped) {
            (_, None) => Ok((image, per_pixel)),
            (
                &Op::RandomResizedCrop {
                    height,
                    width,
                    filter,
                    ..
                },
                Some(_),
            ) => Ok((resample(image, height, width, filter)?, per_pixel + 1)),
            (_, Some(_)) => Ok((image, per_pixel + 1)),
        }
    }
}

/// `Decode(draft=True)`'s scale for a box resized to `out`: the largest of 8,
/// 4 and 2 that keeps the box at least `out` in both directions, else 1.
pub fn dct_scale((h, w): (usize, usize), (out_h, out_w): (usize, usize)) -> usize {
    [8, 4, 2]
        .into_iter()
        .find(|&s| h >= s * out_h && w >= s * out_w)
        .unwrap_or(1)
}
