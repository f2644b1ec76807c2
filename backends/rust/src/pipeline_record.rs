//! `Compose.to_dict()` parsed into the native [`Pipeline`]: plain data in,
//! an error naming the record for anything the native side does not know.

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

use dataloader_imaging::color::{Adjust, Jitter};
use dataloader_imaging::erasing::ErasingValue;
use dataloader_imaging::pipeline::Size;
use dataloader_imaging::point::Point;
use dataloader_imaging::random_crop::PadMode;
use dataloader_imaging::resample::Filter;
use dataloader_imaging::{Op, Pipeline};

fn bad(record: &Bound<'_, PyAny>, why: &str) -> PyErr {
    PyValueError::new_err(format!("MapWork.images.pipeline: {why} in {record}"))
}

fn pair(value: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    Ok((value.get_item(0)?.extract()?, value.get_item(1)?.extract()?))
}

fn range(value: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    Ok((value.get_item(0)?.extract()?, value.get_item(1)?.extract()?))
}

/// Decode's `max_pixels`: any int >= 1 (the op checks it); past u64, no image is over it.
fn pixel_limit(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    match value.extract::<u64>() {
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => Ok(u64::MAX),
        other => other,
    }
}

fn op(record: &Bound<'_, PyAny>) -> PyResult<Op> {
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        record
            .get_item(key)
            .map_err(|_| bad(record, &format!("no {key:?}")))
    };
    let filter = |key: &str| -> PyResult<Filter> {
        let name: String = get(key)?.extract()?;
        Filter::from_name(&name).ok_or_else(|| bad(record, "an unknown interpolation"))
    };
    let name: String = get("op")?.extract()?;
    Ok(match name.as_str() {
        "decode" => Op::Decode {
            max_pixels: pixel_limit(&get("max_pixels")?)?,
            draft: get("draft")?.extract()?,
        },
        "to_rgb" => Op::ToRgb,
        "to_gray" => Op::ToGray,
        "crop" => Op::Crop {
            top: get("top")?.extract()?,
            left: get("left")?.extract()?,
            height: get("height")?.extract()?,
            width: get("width")?.extract()?,
        },
        "center_crop" => {
            let (height, width) = pair(&get("size")?)?;
            Op::CenterCrop { height, width }
        }
        "resize" => {
            let size = get("size")?;
            let size = match size.extract::<usize>() {
                Ok(shorter) => Size::Shorter(shorter),
                Err(_) => {
                    let (h, w) = pair(&size)?;
                    Size::Exact(h, w)
                }
            };
            Op::Resize {
                size,
                filter: filter("interpolation")?,
            }
        }
        "random_resized_crop" => {
            let (height, width) = pair(&get("size")?)?;
            Op::RandomResizedCrop {
                height,
                width,
                scale: range(&get("scale")?)?,
                ratio: range(&get("ratio")?)?,
                filter: filter("interpolation")?,
            }
        }
        "pad" => Op::Pad {
            top: get("top")?.extract()?,
            bottom: get("bottom")?.extract()?,
            left: get("left")?.extract()?,
            right: get("right")?.extract()?,
            value: get("value")?.extract()?,
        },
        "random_crop" => {
            let (height, width) = pair(&get("size")?)?;
            let mode: String = get("padding_mode")?.extract()?;
            Op::RandomCrop {
                height,
                width,
                padding: get("padding")?.extract()?,
                pad_if_needed: get("pad_if_needed")?.extract()?,
                fill: get("fill")?.extract()?,
                mode: PadMode::from_name(&mode)
                    .ok_or_else(|| bad(record, "an unknown padding_mode"))?,
            }
        }
        "random_erasing" => {
            let value = get("value")?;
            let value = match value.extract::<String>() {
                Ok(word) if word == "random" => ErasingValue::Random,
                Ok(_) => return Err(bad(record, "an unknown RandomErasing value")),
                Err(_) => {
                    let numbers: Vec<f64> = value.extract()?;
                    ErasingValue::Fill(numbers.into_iter().map(|v| v as f32).collect())
                }
            };
            Op::RandomErasing {
                p: get("p")?.extract()?,
                scale: range(&get("scale")?)?,
                ratio: range(&get("ratio")?)?,
                value,
            }
        }
        "color_jitter" => {
            let range = |key: &str| -> PyResult<Option<(f64, f64)>> {
                let value = get(key)?;
                if value.is_none() {
                    return Ok(None);
                }
                range(&value).map(Some)
            };
            Op::ColorJitter(Jitter {
                brightness: range("brightness")?,
                contrast: range("contrast")?,
                saturation: range("saturation")?,
                hue: range("hue")?,
            })
        }
        "gaussian_blur" => Op::GaussianBlur {
            kernel_size: pair(&get("kernel_size")?)?,
            sigma: range(&get("sigma")?)?,
        },
        "random_apply" => Op::RandomApply {
            p: get("p")?.extract()?,
            ops: get("transforms")?
                .try_iter()?
                .map(|r| op(&r?))
                .collect::<PyResult<Vec<Op>>>()?,
        },
        "random_grayscale" => Op::Point(Point::RandomGrayscale {
            p: get("p")?.extract()?,
        }),
        "random_solarize" => Op::Point(Point::RandomSolarize {
            threshold: get("threshold")?.extract()?,
            p: get("p")?.extract()?,
        }),
        "random_posterize" => Op::Point(Point::RandomPosterize {
            bits: get("bits")?.extract()?,
            p: get("p")?.extract()?,
        }),
        "random_autocontrast" => Op::Point(Point::RandomAutocontrast {
            p: get("p")?.extract()?,
        }),
        "random_adjust_sharpness" => Op::Point(Point::RandomAdjustSharpness {
            factor: get("sharpness_factor")?.extract()?,
            p: get("p")?.extract()?,
        }),
        "random_equalize" => Op::Point(Point::RandomEqualize {
            p: get("p")?.extract()?,
        }),
        "adjust_brightness" | "adjust_contrast" | "adjust_saturation" | "adjust_hue" => {
            let steps = ["brightness", "contrast", "saturation", "hue"];
            Op::Adjust(Adjust {
                step: steps.iter().position(|s| name.ends_with(s)).unwrap_or(0),
                factor: get("factor")?.extract()?,
            })
        }
        "pad_to" => Op::PadTo {
            height: get("height")?.extract()?,
            width: get("width")?.extract()?,
            value: get("value")?.extract()?,
        },
        "hflip" => Op::HFlip,
        "vflip" => Op::VFlip,
        "random_hflip" => Op::RandomHFlip {
            p: get("p")?.extract()?,
        },
        "random_vflip" => Op::RandomVFlip {
            p: get("p")?.extract()?,
        },
        "rotate90" => Op::Rotate90 {
            k: get("k")?.rem(4)?.extract()?, // any int: the same quarter turns
        },
        "to_float" => Op::ToFloat,
        "normalize" => {
            let values = |key: &str| -> PyResult<Vec<f32>> {
                let doubles: Vec<f64> = get(key)?.extract()?;
                Ok(doubles.into_iter().map(|v| v as f32).collect())
            };
            Op::Normalize {
                mean: values("mean")?,
                std: values("std")?,
            }
        }
        "to_chw" => Op::ToChw,
        "to_hwc" => Op::ToHwc,
        _ => return Err(bad(record, "an unknown op")),
    })
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
