//! torchvision's `GaussianBlur` as `transforms/_blur.py` computes it: a
//! kernel from `exp` in `f64` (summed in order) kept as `f32`, the edges
//! mirrored (`reflect`), a horizontal pass then a vertical one in `f32`, each
//! summing its taps in order, rounded to the nearest, ties to even.

use crate::random::ItemRandom;
use crate::{Fallback, Image, Pixels};

/// `gaussian_kernel` of `_blur.py`: the same operations in the same order.
pub fn gaussian_kernel(size: usize, sigma: f64) -> Vec<f32> {
    let half = (size as f64 - 1.0) / 2.0;
    let weights: Vec<f64> = (0..size)
        .map(|i| {
            let t = (i as f64 - half) / sigma;
            (-0.5 * (t * t)).exp()
        })
        .collect();
    let mut total = 0.0;
    for weight in &weights {
        total += weight;
    }
    weights
        .iter()
        .map(|weight| (weight / total) as f32)
        .collect()
}

/// The index `i` (which may be up to `reach` outside `0..length`) mirrored
/// without repeating the edge, as NumPy's and torch's `reflect` padding.
fn reflect(i: isize, length: usize) -> usize {
    let last = length as isize - 1;
    let mirrored = if i < 0 {
        -i
    } else if i > last {
        2 * last - i
    } else {
        i
    };
    mirrored as usize
}

pub fn gaussian_blur(
    image: Image,
    random: &mut ItemRandom,
    (size_x, size_y): (usize, usize),
    (low, high): (f64, f64),
) -> Result<Image, Fallback> {
    let sigma = random.uniform_between(low, high);
    let (h, w, c) = (image.height, image.width, image.channels);
    let Pixels::U8(pixels) = &image.pixels else {
        return Err(Fallback("GaussianBlur on a float32 image".into()));
    };
    let (reach_x, reach_y) = (size_x / 2, size_y / 2);
    if reach_x >= w.max(1) || reach_y >= h.max(1) || image.chw {
        return Err(Fallback("an image GaussianBlur cannot mirror".into()));
    }
    let (kernel_x, kernel_y) = (
        gaussian_kernel(size_x, sigma),
        gaussian_kernel(size_y, sigma),
    );
    // The horizontal pass over every row the vertical one reads (the mirrored ones too).
    let rows = h + 2 * reach_y;
    let mut across = vec![0f32; rows * w * c];
    for row in 0..rows {
        let source = reflect(row as isize - reach_y as isize, h);
        let line = &pixels[source * w * c..(source + 1) * w * c];
        let out = &mut across[row * w * c..(row + 1) * w * c];
        for x in 0..w {
            for channel in 0..c {
                let mut total = 0f32;
                for (i, weight) in kernel_x.iter().enumerate() {
                    let column = reflect(x as isize + i as isize - reach_x as isize, w);
                    let tap = weight * line[column * c + channel] as f32;
                    total = if i == 0 { tap } else { total + tap };
                }
                out[x * c + channel] = total;
            }
        }
    }
    let mut blurred = vec![0u8; h * w * c];
    for y in 0..h {
        for position in 0..w * c {
            let mut total = 0f32;
            for (j, weight) in kernel_y.iter().enumerate() {
                let tap = weight * across[(y + j) * w * c + position];
                total = if j == 0 { tap } else { total + tap };
            }
            blurred[y * w * c + position] = total.round_ties_even().clamp(0.0, 255.0) as u8;
        }
    }
    Ok(Image {
        pixels: Pixels::U8(blurred),
        ..image
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_sums_to_one_and_is_symmetric() {
        let kernel = gaussian_kernel(7, 1.3);
        assert_eq!(kernel.len(), 7);
        assert!((kernel.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(kernel[0], kernel[6]);
        assert!(kernel[3] > kernel[2]);
    }

    #[test]
    fn reflection_does_not_repeat_the_edge() {
        let mirrored: Vec<usize> = (-2..7).map(|i| reflect(i, 5)).collect();
        assert_eq!(mirrored, vec![2, 1, 0, 1, 2, 3, 4, 3, 2]);
    }

    #[test]
    fn a_flat_image_stays_flat_and_a_small_one_goes_to_the_reference() {
        let mut random = ItemRandom::new(1, 2);
        let flat = Image::u8(6, 5, 3, vec![77; 90]);
        let out = gaussian_blur(flat.clone(), &mut random, (5, 3), (0.5, 2.0)).unwrap();
        assert_eq!(out, flat);
        let small = Image::u8(2, 9, 1, vec![1; 18]);
        assert!(gaussian_blur(small, &mut random, (3, 5), (1.0, 1.0)).is_err());
    }
}
