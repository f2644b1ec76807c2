//! `dataloader_api.transforms` natively: the same ops, the same random
//! numbers, the same pixels as the Pillow + NumPy reference (resampling is
//! Pillow's algorithm, ported), with no Python in it. The pyo3 crate parses
//! a pipeline's record into [`Pipeline`] and runs it without the interpreter.

pub mod blur;
pub mod color;
pub mod decode;
pub mod erasing;
pub mod jpeg;
pub mod op;
pub mod ops;
pub mod pipeline;
mod pipeline_decode;
pub mod point;
pub mod random;
pub mod random_crop;
pub mod resample;
pub mod resample_simd;

pub use op::{Op, Size};
pub use pipeline::Pipeline;

/// An image: `height` × `width` × `channels`, row-major, HWC unless `chw`.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub height: usize,
    pub width: usize,
    pub channels: usize,
    pub chw: bool,
    pub pixels: Pixels,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    U8(Vec<u8>),
    F32(Vec<f32>),
}

/// Why the native pipeline hands an item to the reference: an input it does
/// not reproduce exactly (a CMYK JPEG, lossy WebP, 16-bit gray PNG...) or any
/// error (corrupt bytes, a crop that does not fit, an image over
/// `max_pixels`). The reference then gives the item, or raises the error
/// with its own type and message, so both paths fail alike.
#[derive(Debug, PartialEq)]
pub struct Fallback(pub String);

/// The most bytes an image made natively may have. A larger one (a pad, a
/// resize or a decode the user asked for) goes to the reference, whose result
/// or error (NumPy's or Pillow's) the user gets: a failed allocation here would
/// abort the interpreter instead.
pub const MAX_IMAGE_BYTES: usize = 1 << 30;

/// Whether a `height` × `width` × `channels` image of `element`-byte values
/// may be made natively (see `MAX_IMAGE_BYTES`).
pub fn admit(height: usize, width: usize, channels: usize, element: usize) -> Result<(), Fallback> {
    let bytes = height
        .checked_mul(width)
        .and_then(|n| n.checked_mul(channels))
        .and_then(|n| n.checked_mul(element));
    match bytes {
        Some(bytes) if bytes <= MAX_IMAGE_BYTES => Ok(()),
        _ => Err(Fallback(format!(
            "a {height}x{width}x{channels} image is larger than the native pipeline makes"
        ))),
    }
}

impl Image {
    pub fn u8(height: usize, width: usize, channels: usize, data: Vec<u8>) -> Image {
        debug_assert_eq!(data.len(), height * width * channels);
        Image {
            height,
            width,
            channels,
            chw: false,
            pixels: Pixels::U8(data),
        }
    }

    pub fn f32(height: usize, width: usize, channels: usize, data: Vec<f32>) -> Image {
        debug_assert_eq!(data.len(), height * width * channels);
        Image {
            height,
            width,
            channels,
            chw: false,
            pixels: Pixels::F32(data),
        }
    }

    /// The array shape as NumPy sees it.
    pub fn shape(&self) -> [usize; 3] {
        if self.chw {
            [self.channels, self.height, self.width]
        } else {
            [self.height, self.width, self.channels]
        }
    }
}

/// Whether libjpeg-turbo was built with its SIMD kernels (NASM at build time):
/// the same pixels either way, about 2x faster decoding with them.
pub const JPEG_SIMD: bool = cfg!(jpeg_simd);
