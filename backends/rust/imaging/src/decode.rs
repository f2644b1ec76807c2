//! `Decode`: the format sniffed, the size checked from the header, then
//! libjpeg-turbo (as mozjpeg, in `jpeg.rs`), `png` or `image-webp`. Anything this cannot
//! match exactly, and every decoding error, is a [`Fallback`]: the
//! reference then decodes the item and raises Pillow's own error, so both
//! paths agree on what fails and how.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::jpeg::{self, Region};
use crate::ops;
use crate::{Fallback, Image};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
    Webp,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Jpeg => "JPEG",
            Format::Png => "PNG",
            Format::Webp => "WEBP",
        }
    }
}

pub fn sniff(data: &[u8]) -> Option<Format> {
    if data.starts_with(b"\xff\xd8\xff") {
        Some(Format::Jpeg)
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Format::Png)
    } else if data.starts_with(b"RIFF") && data.len() >= 12 && &data[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else {
        None
    }
}

fn fallback(why: impl Into<String>) -> Fallback {
    Fallback(why.into())
}

fn check_size(
    format: Format,
    width: usize,
    height: usize,
    max_pixels: u64,
) -> Result<(), Fallback> {
    let pixels = width as u64 * height as u64;
    if pixels > max_pixels {
        return Err(fallback(format!("{} image over max_pixels", format.name())));
    }
    crate::admit(height, width, 4, 1) // up to 4 channels of u8
}

pub fn decode(data: &[u8], max_pixels: u64) -> Result<Image, Fallback> {
    decode_cropped(data, max_pixels, |_, _, _| None).map(|(image, _)| image)
}

/// Decode, keeping only the box `region(height, width, scalable)` gives, if it
/// fits: a JPEG decodes just the part that holds it, with the same pixels, or
/// (`scalable` is true for JPEG only) at the box's `scale`.
pub fn decode_cropped(
    data: &[u8],
    max_pixels: u64,
    region: impl FnOnce(usize, usize, bool) -> Option<Region>,
) -> Result<(Image, Option<Region>), Fallback> {
    let Some(format) = sniff(data) else {
        return Err(fallback("not an image format decoded natively"));
    };
    // A decoder that panics (libjpeg's errors unwind) must not cross into Python.
    match catch_unwind(AssertUnwindSafe(|| match format {
        Format::Jpeg => jpeg(data, max_pixels, region),
        Format::Png => crop_decoded(png(data, max_pixels)?, region),
        Format::Webp => crop_decoded(webp(data, max_pixels)?, region),
    })) {
        Ok(result) => result,
        Err(_) => Err(fallback("the native decoder failed")),
    }
}

fn crop_decoded(
    image: Image,
    region: impl FnOnce(usize, usize, bool) -> Option<Region>,
) -> Result<(Image, Option<Region>), Fallback> {
    let region = region(image.height, image.width, false);
    match region.filter(|r| r.scale == 1 && r.fits(image.height, image.width)) {
        Some(r) => Ok((ops::crop(image, r.top, r.left, r.height, r.width), Some(r))),
        None => Ok((image, None)),
    }
}

fn jpeg(
    data: &[u8],
    max_pixels: u64,
    region: impl FnOnce(usize, usize, bool) -> Option<Region>,
) -> Result<(Image, Option<Region>), Fallback> {
    // libjpeg pads a truncated stream with a fake end marker; Pillow raises.
    let end = data.iter().rposition(|&b| b != 0).unwrap_or(0);
    if end < 1 || data[end - 1..=end] != [0xff, 0xd9] {
        return Err(fallback("no end-of-image marker"));
    }
    let admit = |height, width| check_size(Format::Jpeg, width, height, max_pixels);
    let decoded = jpeg::decode(data, admit, region)?;
    let image = Image::u8(
        decoded.height,
        decoded.width,
        decoded.channels,
        decoded.pixels,
    );
    Ok((image, decoded.region))
}

fn png(data: &[u8], max_pixels: u64) -> Result<Image, Fallback> {
    let mut decoder = png::Decoder::new(Cursor::new(data));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let header = decoder
        .read_header_info()
        .map_err(|e| fallback(e.to_string()))?;
    let (width, height) = (header.width as usize, header.height as usize);
    let (color, depth) = (header.color_type, header.bit_depth);
    check_size(Format::Png, width, height, max_pixels)?;
    if color == png::ColorType::Grayscale && depth == png::BitDepth::Sixteen {
        return Err(fallback("16-bit gray (Pillow's mode I;16)"));
    }
    let mut reader = decoder.read_info().map_err(|e| fallback(e.to_string()))?;
    if reader.info().is_animated() {
        return Err(fallback("an animated PNG"));
    }
    let mut buffer = vec![
        0;
        reader
            .output_buffer_size()
            .ok_or_else(|| fallback("too large"))?
    ];
    let frame = reader
        .next_frame(&mut buffer)
        .map_err(|e| fallback(e.to_string()))?;
    buffer.truncate(frame.buffer_size());
    let channels = frame.color_type.samples();
    // tRNS adds alpha on expansion; Pillow keeps it only for palette images.
    let added_alpha = reader.info().trns.is_some() && color != png::ColorType::Indexed;
    let (channels, pixels) = if added_alpha {
        let kept = channels - 1;
        let pixels = buffer
            .chunks_exact(channels)
            .flat_map(|p| p[..kept].to_vec())
            .collect();
        (kept, pixels)
    } else {
        (channels, buffer)
    };
    Ok(Image::u8(height, width, channels, pixels))
}

fn webp(data: &[u8], max_pixels: u64) -> Result<Image, Fallback> {
    let mut decoder =
        image_webp::WebPDecoder::new(Cursor::new(data)).map_err(|e| fallback(e.to_string()))?;
    let (width, height) = decoder.dimensions();
    let (width, height) = (width as usize, height as usize);
    check_size(Format::Webp, width, height, max_pixels)?;
    if decoder.is_animated() || decoder.is_lossy() {
        // libwebp's lossy decoder is the reference; image-webp's rounds differently.
        return Err(fallback("lossy or animated WebP"));
    }
    let channels = if decoder.has_alpha() { 4 } else { 3 };
    let mut pixels = vec![
        0;
        decoder
            .output_buffer_size()
            .ok_or_else(|| fallback("too large"))?
    ];
    decoder
        .read_image(&mut pixels)
        .map_err(|e| fallback(e.to_string()))?;
    Ok(Image::u8(height, width, channels, pixels))
}
