//! torchvision's `RandomCrop`: the padding (NumPy's modes, which torchvision
//! uses for PIL images), the crop's place from the item's random numbers, and
//! the cropped pixels read straight from the image.

use crate::random::ItemRandom;
use crate::{Image, Pixels};

/// How `RandomCrop` fills what lies outside the image: `fill`, the nearest edge
/// pixel, or a mirror without (`Reflect`) or with (`Symmetric`) the edge pixel
/// repeated; NumPy's `pad` modes, which torchvision uses for PIL images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    Constant,
    Edge,
    Reflect,
    Symmetric,
}

impl PadMode {
    pub fn from_name(name: &str) -> Option<PadMode> {
        Some(match name {
            "constant" => PadMode::Constant,
            "edge" => PadMode::Edge,
            "reflect" => PadMode::Reflect,
            "symmetric" => PadMode::Symmetric,
            _ => return None,
        })
    }

    /// The source position of padded position `at` (relative to the image's
    /// first pixel) on an axis of `size` pixels; None for `fill`.
    fn source(self, at: i64, size: usize) -> Option<usize> {
        let n = size as i64;
        if (0..n).contains(&at) {
            return Some(at as usize);
        }
        Some(match self {
            PadMode::Constant => return None,
            PadMode::Edge => at.clamp(0, n - 1) as usize,
            PadMode::Reflect if n == 1 => 0,
            PadMode::Reflect => {
                let i = at.rem_euclid(2 * (n - 1));
                (if i >= n { 2 * (n - 1) - i } else { i }) as usize
            }
            PadMode::Symmetric => {
                let i = at.rem_euclid(2 * n);
                (if i >= n { 2 * n - 1 - i } else { i }) as usize
            }
        })
    }
}

/// torchvision's `RandomCrop` parameters: the padding (left, top, right,
/// bottom) grown by `pad_if_needed` on both sides of a dimension smaller than
/// the crop, and the crop's top and left in the padded image, each drawn only
/// when there is room. None when the padded image is smaller than the crop.
pub fn random_crop_box(
    random: &mut ItemRandom,
    height: usize,
    width: usize,
    size: (usize, usize),
    padding: [usize; 4],
    pad_if_needed: bool,
) -> Option<([usize; 4], usize, usize)> {
    let [mut left, mut top, mut right, mut bottom] = padding;
    let (mut padded_h, mut padded_w) = (height + top + bottom, width + left + right);
    if pad_if_needed && padded_h < size.0 {
        let more = size.0 - padded_h;
        (top, bottom, padded_h) = (top + more, bottom + more, padded_h + 2 * more);
    }
    if pad_if_needed && padded_w < size.1 {
        let more = size.1 - padded_w;
        (left, right, padded_w) = (left + more, right + more, padded_w + 2 * more);
    }
    if padded_h < size.0 || padded_w < size.1 {
        return None;
    }
    let crop_top = if padded_h > size.0 {
        random.below((padded_h - size.0 + 1) as u64) as usize
    } else {
        0
    };
    let crop_left = if padded_w > size.1 {
        random.below((padded_w - size.1 + 1) as u64) as usize
    } else {
        0
    };
    Some(([left, top, right, bottom], crop_top, crop_left))
}

/// The image padded by (`left`, `top`) in `mode` and cropped to `size` at
/// (`crop_top`, `crop_left`) of the padded image, without building the padded
/// image: each output pixel is read from its source position.
pub fn pad_crop(
    image: Image,
    origin: (usize, usize),
    at: (usize, usize),
    size: (usize, usize),
    mode: PadMode,
    fill: f64,
) -> Image {
    let (top, left) = origin;
    let rows: Vec<Option<usize>> = (0..size.0)
        .map(|y| mode.source((at.0 + y) as i64 - top as i64, image.height))
        .collect();
    let columns: Vec<Option<usize>> = (0..size.1)
        .map(|x| mode.source((at.1 + x) as i64 - left as i64, image.width))
        .collect();
    fn gather<T: Copy>(
        v: &[T],
        fill: T,
        width: usize,
        c: usize,
        rows: &[Option<usize>],
        columns: &[Option<usize>],
    ) -> Vec<T> {
        let mut out = Vec::with_capacity(rows.len() * columns.len() * c);
        for row in rows {
            for column in columns {
                match (row, column) {
                    (Some(y), Some(x)) => {
                        let from = (y * width + x) * c;
                        out.extend_from_slice(&v[from..from + c]);
                    }
                    _ => out.extend(std::iter::repeat_n(fill, c)),
                }
            }
        }
        out
    }
    let (w, c) = (image.width, image.channels);
    let pixels = match image.pixels {
        Pixels::U8(v) => Pixels::U8(gather(&v, fill as u8, w, c, &rows, &columns)),
        Pixels::F32(v) => Pixels::F32(gather(&v, fill as f32, w, c, &rows, &columns)),
    };
    Image {
        height: size.0,
        width: size.1,
        pixels,
        ..image
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn padded(mode: PadMode, size: usize, pad: i64) -> Vec<Option<usize>> {
        (-pad..size as i64 + pad)
            .map(|at| mode.source(at, size))
            .collect()
    }

    #[test]
    fn pad_modes_equal_numpys_pad_however_wide() {
        // np.pad(np.arange(3), 5, mode=...) and np.pad(np.arange(1), 3, mode=...)
        let expect = |v: &[usize]| v.iter().map(|&i| Some(i)).collect::<Vec<_>>();
        let reflect = [1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1];
        let symmetric = [1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1];
        let edge = [0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2];
        assert_eq!(padded(PadMode::Reflect, 3, 5), expect(&reflect));
        assert_eq!(padded(PadMode::Symmetric, 3, 5), expect(&symmetric));
        assert_eq!(padded(PadMode::Edge, 3, 5), expect(&edge));
        for mode in [PadMode::Reflect, PadMode::Symmetric, PadMode::Edge] {
            assert_eq!(padded(mode, 1, 3), expect(&[0; 7]));
        }
        assert_eq!(padded(PadMode::Constant, 1, 1), vec![None, Some(0), None]);
    }
}
