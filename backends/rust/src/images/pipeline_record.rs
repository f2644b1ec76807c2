//! `Compose.to_dict()` parsed into the native [`Pipeline`]: plain data in,
//! an error naming the record for anything the native side does not know.
//!
//! One op, one row of [`OPS`]: its Python `name` and the [`Op`] built from the
//! record's own fields, read by the names the Python record gives them
//! (`dataclasses.fields` of the op, as `Op.to_dict` writes them). The test
//! `tests/test_op_parity.py` holds the two languages to each other:
//! every Python op has a row here and every row a Python op, and each row
//! reads exactly its record's fields (`pipeline_fields`).

use std::cell::RefCell;

use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

use dataloader_imaging::color::{Adjust, Jitter};
use dataloader_imaging::erasing::ErasingValue;
use dataloader_imaging::point::Point;
use dataloader_imaging::random_crop::PadMode;
use dataloader_imaging::resample::Filter;
use dataloader_imaging::{Op, Pipeline, Size};

/// One op's record (a dict), its fields read by name; the names read are kept.
struct Record<'a, 'py> {
    dict: &'a Bound<'py, PyAny>,
    read: RefCell<Vec<String>>,
}

impl<'a, 'py> Record<'a, 'py> {
    fn new(dict: &'a Bound<'py, PyAny>) -> Self {
        Record {
            dict,
            read: RefCell::new(Vec::new()),
        }
    }

    fn bad(&self, why: &str) -> PyErr {
        PyValueError::new_err(format!("MapWork.images.pipeline: {why} in {}", self.dict))
    }

    /// The field `key`, as Python holds it.
    fn field(&self, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.read.borrow_mut().push(key.to_owned());
        self.dict
            .get_item(key)
            .map_err(|_| self.bad(&format!("no {key:?}")))
    }

    /// The field `key` as a Rust value.
    fn get<T: FromPyObjectOwned<'py>>(&self, key: &str) -> PyResult<T> {
        self.field(key)?.extract::<T>().map_err(Into::into)
    }

    /// A `(height, width)` or `(x, y)` pair of sizes.
    fn pair(&self, key: &str) -> PyResult<(usize, usize)> {
        let value = self.field(key)?;
        Ok((value.get_item(0)?.extract()?, value.get_item(1)?.extract()?))
    }

    /// A `(low, high)` pair of numbers.
    fn range(&self, key: &str) -> PyResult<(f64, f64)> {
        range(&self.field(key)?)
    }

    /// A `(low, high)` pair, or `None` (a `ColorJitter` adjustment not asked for).
    fn optional_range(&self, key: &str) -> PyResult<Option<(f64, f64)>> {
        let value = self.field(key)?;
        if value.is_none() {
            return Ok(None);
        }
        range(&value).map(Some)
    }

    fn filter(&self, key: &str) -> PyResult<Filter> {
        let name: String = self.get(key)?;
        Filter::from_name(&name).ok_or_else(|| self.bad("an unknown interpolation"))
    }

    /// Numbers per channel, as `f32`.
    fn channels(&self, key: &str) -> PyResult<Vec<f32>> {
        let doubles: Vec<f64> = self.get(key)?;
        Ok(doubles.into_iter().map(|v| v as f32).collect())
    }

    /// Decode's `max_pixels`: any int >= 1 (the op checks it); past u64, no image is over it.
    fn pixel_limit(&self, key: &str) -> PyResult<u64> {
        let value = self.field(key)?;
        match value.extract::<u64>() {
            Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => Ok(u64::MAX),
            other => other,
        }
    }
}

fn range(value: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    Ok((value.get_item(0)?.extract()?, value.get_item(1)?.extract()?))
}

type Parse = fn(&Record<'_, '_>, &str) -> PyResult<Op>;

/// Every op the native side runs: its Python `name`, and its [`Op`] from its
/// record's fields (the second argument is the name, for the ops that share a
/// row). Adding an op: its Python record first, then its row here.
const OPS: &[(&str, Parse)] = &[
    ("decode", |r, _| {
        Ok(Op::Decode {
            max_pixels: r.pixel_limit("max_pixels")?,
            draft: r.get("draft")?,
        })
    }),
    ("to_rgb", |_, _| Ok(Op::ToRgb)),
    ("to_gray", |_, _| Ok(Op::ToGray)),
    ("crop", |r, _| {
        Ok(Op::Crop {
            top: r.get("top")?,
            left: r.get("left")?,
            height: r.get("height")?,
            width: r.get("width")?,
        })
    }),
    ("center_crop", |r, _| {
        let (height, width) = r.pair("size")?;
        Ok(Op::CenterCrop { height, width })
    }),
    ("resize", |r, _| {
        let size = r.field("size")?;
        let size = match size.extract::<usize>() {
            Ok(shorter) => Size::Shorter(shorter),
            Err(_) => {
                let (h, w) = (size.get_item(0)?.extract()?, size.get_item(1)?.extract()?);
                Size::Exact(h, w)
            }
        };
        Ok(Op::Resize {
            size,
            filter: r.filter("interpolation")?,
        })
    }),
    ("random_resized_crop", |r, _| {
        let (height, width) = r.pair("size")?;
        Ok(Op::RandomResizedCrop {
            height,
            width,
            scale: r.range("scale")?,
            ratio: r.range("ratio")?,
            filter: r.filter("interpolation")?,
        })
    }),
    ("pad", |r, _| {
        Ok(Op::Pad {
            top: r.get("top")?,
            bottom: r.get("bottom")?,
            left: r.get("left")?,
            right: r.get("right")?,
            value: r.get("value")?,
        })
    }),
    ("pad_to", |r, _| {
        Ok(Op::PadTo {
            height: r.get("height")?,
            width: r.get("width")?,
            value: r.get("value")?,
        })
    }),
    ("random_crop", |r, _| {
        let (height, width) = r.pair("size")?;
        let mode: String = r.get("padding_mode")?;
        Ok(Op::RandomCrop {
            height,
            width,
            padding: r.get("padding")?,
            pad_if_needed: r.get("pad_if_needed")?,
            fill: r.get("fill")?,
            mode: PadMode::from_name(&mode).ok_or_else(|| r.bad("an unknown padding_mode"))?,
        })
    }),
    ("hflip", |_, _| Ok(Op::HFlip)),
    ("vflip", |_, _| Ok(Op::VFlip)),
    ("random_hflip", |r, _| {
        Ok(Op::RandomHFlip { p: r.get("p")? })
    }),
    ("random_vflip", |r, _| {
        Ok(Op::RandomVFlip { p: r.get("p")? })
    }),
    ("rotate90", |r, _| {
        Ok(Op::Rotate90 {
            k: r.field("k")?.rem(4)?.extract()?, // any int: the same quarter turns
        })
    }),
    ("to_float", |_, _| Ok(Op::ToFloat)),
    ("normalize", |r, _| {
        Ok(Op::Normalize {
            mean: r.channels("mean")?,
            std: r.channels("std")?,
        })
    }),
    ("to_chw", |_, _| Ok(Op::ToChw)),
    ("to_hwc", |_, _| Ok(Op::ToHwc)),
    ("random_erasing", |r, _| {
        let value = r.field("value")?;
        let value = match value.extract::<String>() {
            Ok(word) if word == "random" => ErasingValue::Random,
            Ok(_) => return Err(r.bad("an unknown RandomErasing value")),
            Err(_) => {
                let numbers: Vec<f64> = value.extract()?;
                ErasingValue::Fill(numbers.into_iter().map(|v| v as f32).collect())
            }
        };
        Ok(Op::RandomErasing {
            p: r.get("p")?,
            scale: r.range("scale")?,
            ratio: r.range("ratio")?,
            value,
        })
    }),
    ("color_jitter", |r, _| {
        Ok(Op::ColorJitter(Jitter {
            brightness: r.optional_range("brightness")?,
            contrast: r.optional_range("contrast")?,
            saturation: r.optional_range("saturation")?,
            hue: r.optional_range("hue")?,
        }))
    }),
    ("adjust_brightness", adjust),
    ("adjust_contrast", adjust),
    ("adjust_saturation", adjust),
    ("adjust_hue", adjust),
    ("gaussian_blur", |r, _| {
        Ok(Op::GaussianBlur {
            kernel_size: r.pair("kernel_size")?,
            sigma: r.range("sigma")?,
        })
    }),
    ("random_apply", |r, _| {
        Ok(Op::RandomApply {
            p: r.get("p")?,
            ops: ops_of(r)?,
        })
    }),
    ("random_choice", |r, _| {
        let (ops, p): (Vec<Op>, Vec<f64>) = (ops_of(r)?, r.get("p")?);
        if p.len() != ops.len()
            || p.iter().any(|&w| w.is_nan() || w < 0.0)
            || !p.iter().any(|&w| w > 0.0)
        {
            return Err(r.bad("p should hold a weight >= 0 per op, not all 0"));
        }
        Ok(Op::RandomChoice { p, ops })
    }),
    ("random_order", |r, _| {
        Ok(Op::RandomOrder { ops: ops_of(r)? })
    }),
    ("random_grayscale", |r, _| {
        Ok(Op::Point(Point::RandomGrayscale { p: r.get("p")? }))
    }),
    ("random_solarize", |r, _| {
        Ok(Op::Point(Point::RandomSolarize {
            threshold: r.get("threshold")?,
            p: r.get("p")?,
        }))
    }),
    ("random_posterize", |r, _| {
        Ok(Op::Point(Point::RandomPosterize {
            bits: r.get("bits")?,
            p: r.get("p")?,
        }))
    }),
    ("random_autocontrast", |r, _| {
        Ok(Op::Point(Point::RandomAutocontrast { p: r.get("p")? }))
    }),
    ("random_equalize", |r, _| {
        Ok(Op::Point(Point::RandomEqualize { p: r.get("p")? }))
    }),
    ("random_adjust_sharpness", |r, _| {
        Ok(Op::Point(Point::RandomAdjustSharpness {
            factor: r.get("sharpness_factor")?,
            p: r.get("p")?,
        }))
    }),
];

/// The `Adjust` ops: `ColorJitter`'s step their name ends with, at a fixed factor.
fn adjust(r: &Record<'_, '_>, name: &str) -> PyResult<Op> {
    let steps = ["brightness", "contrast", "saturation", "hue"];
    Ok(Op::Adjust(Adjust {
        step: steps.iter().position(|s| name.ends_with(s)).unwrap_or(0),
        factor: r.get("factor")?,
    }))
}

/// One op record parsed, and the fields its row read.
fn parse_op(record: &Bound<'_, PyAny>) -> PyResult<(Op, Vec<String>)> {
    let record = Record::new(record);
    let name: String = record
        .dict
        .get_item("op")
        .map_err(|_| record.bad("no \"op\""))?
        .extract()?;
    let Some((_, parse)) = OPS.iter().find(|(known, _)| *known == name) else {
        return Err(record.bad("an unknown op"));
    };
    let op = parse(&record, &name)?;
    Ok((op, record.read.into_inner()))
}

/// The ops of an op over ops (its `transforms`, as their own records).
fn ops_of(r: &Record<'_, '_>) -> PyResult<Vec<Op>> {
    let ops = r
        .field("transforms")?
        .try_iter()?
        .map(|record| op(&record?))
        .collect::<PyResult<Vec<Op>>>()?;
    if ops.is_empty() {
        return Err(r.bad("transforms should hold at least one op"));
    }
    Ok(ops)
}

fn op(record: &Bound<'_, PyAny>) -> PyResult<Op> {
    parse_op(record).map(|(op, _)| op)
}

/// `Compose.to_dict()` as the native pipeline.
pub fn parse(record: &Bound<'_, PyAny>) -> PyResult<Pipeline> {
    let ops = record.get_item("ops")?;
    let ops = ops
        .try_iter()?
        .map(|r| op(&r?))
        .collect::<PyResult<Vec<Op>>>()?;
    Ok(Pipeline { ops })
}

/// `_native.pipeline_ops()`: the name of every op the native side parses.
#[pyfunction]
pub fn pipeline_ops() -> Vec<&'static str> {
    OPS.iter().map(|(name, _)| *name).collect()
}

/// `_native.pipeline_fields(record)`: the fields the native parser reads
/// from one op's record (`op.to_dict()`), in the order it reads them.
#[pyfunction]
pub fn pipeline_fields(record: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    parse_op(record).map(|(_, read)| read)
}
