//! The ops a pipeline holds: `dataloader_api.transforms`' records as the
//! native side holds them, their arguments as the Python record checked them.
//! The pyo3 crate builds them from the records (one row per op in
//! `src/images/pipeline_record.rs`); [`crate::pipeline`] runs them.

use crate::color::{Adjust, Jitter};
use crate::erasing::ErasingValue;
use crate::point::Point;
use crate::random_crop::PadMode;
use crate::resample::Filter;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Size {
    /// The shorter side (aspect kept, the longer side truncated).
    Shorter(usize),
    Exact(usize, usize),
}

/// The ops of `transforms/_ops.py`, with their arguments as checked there.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Decode {
        max_pixels: u64,
        /// A JPEG at 1/2, 1/4 or 1/8 scale when a RandomResizedCrop's box allows
        draft: bool,
    },
    ToRgb,
    ToGray,
    Crop {
        top: usize,
        left: usize,
        height: usize,
        width: usize,
    },
    CenterCrop {
        height: usize,
        width: usize,
    },
    Resize {
        size: Size,
        filter: Filter,
    },
    RandomResizedCrop {
        height: usize,
        width: usize,
        scale: (f64, f64),
        ratio: (f64, f64),
        filter: Filter,
    },
    Pad {
        top: usize,
        bottom: usize,
        left: usize,
        right: usize,
        value: f64,
    },
    PadTo {
        height: usize,
        width: usize,
        value: f64,
    },
    ColorJitter(Jitter),
    Adjust(Adjust),
    /// `ops` in order when the item's draw is below `p` (torchvision's RandomApply)
    RandomApply {
        p: f64,
        ops: Vec<Op>,
    },
    /// one of `ops`, the first whose running sum of the weights `p` (summing to
    /// 1) exceeds the item's draw (torchvision's RandomChoice)
    RandomChoice {
        p: Vec<f64>,
        ops: Vec<Op>,
    },
    /// all of `ops` in an order the item draws: a Fisher-Yates shuffle from the
    /// last position down (torchvision's RandomOrder)
    RandomOrder {
        ops: Vec<Op>,
    },
    Point(Point),
    GaussianBlur {
        /// (x, y): width first, as torchvision
        kernel_size: (usize, usize),
        sigma: (f64, f64),
    },
    RandomErasing {
        p: f64,
        scale: (f64, f64),
        ratio: (f64, f64),
        value: ErasingValue,
    },
    RandomCrop {
        height: usize,
        width: usize,
        /// left, top, right, bottom
        padding: [usize; 4],
        pad_if_needed: bool,
        fill: f64,
        mode: PadMode,
    },
    HFlip,
    VFlip,
    RandomHFlip {
        p: f64,
    },
    RandomVFlip {
        p: f64,
    },
    Rotate90 {
        k: i64,
    },
    ToFloat,
    Normalize {
        mean: Vec<f32>,
        std: Vec<f32>,
    },
    ToChw,
    ToHwc,
}
