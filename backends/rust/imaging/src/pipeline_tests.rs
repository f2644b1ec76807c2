//! `Pipeline`'s tests (a room of their own: `pipeline.rs` holds the ops).

use super::*;

fn ramp(h: usize, w: usize, c: usize) -> Image {
    Image::u8(h, w, c, (0..h * w * c).map(|v| (v % 251) as u8).collect())
}

fn run(ops: Vec<Op>, image: Image) -> Result<Image, Fallback> {
    Pipeline { ops }.run(Input::Decoded(image), 7, 3)
}

#[test]
fn a_dtype_or_channel_count_an_op_does_not_take_goes_to_the_reference() {
    let float = || Image::f32(2, 2, 3, vec![0.5; 12]);
    for op in [Op::ToRgb, Op::ToGray, Op::ToFloat] {
        assert!(run(vec![op], float()).is_err());
    }
    let normalize = Op::Normalize {
        mean: vec![0.5],
        std: vec![0.5],
    };
    assert!(run(vec![normalize], ramp(2, 2, 3)).is_err());
    assert!(run(vec![Op::ToRgb], Image::u8(2, 2, 0, Vec::new())).is_err());
}

#[test]
fn geometry_keeps_every_pixel() {
    let image = ramp(3, 5, 2);
    let turned = run(vec![Op::Rotate90 { k: 1 }; 4], image.clone()).unwrap();
    assert_eq!(turned, image);
    let flipped = run(
        vec![Op::HFlip, Op::HFlip, Op::VFlip, Op::VFlip],
        image.clone(),
    )
    .unwrap();
    assert_eq!(flipped, image);
    let back = run(vec![Op::ToChw, Op::ToHwc], image.clone()).unwrap();
    assert_eq!(back, image);
    let one = run(vec![Op::Rotate90 { k: 1 }], image).unwrap();
    assert_eq!((one.height, one.width), (5, 3));
}

#[test]
fn errors_hand_the_item_to_the_reference() {
    let image = ramp(4, 4, 3);
    let crop = Op::Crop {
        top: 2,
        left: 0,
        height: 3,
        width: 1,
    };
    assert!(run(vec![crop], image.clone()).is_err());
    assert!(run(
        vec![Op::PadTo {
            height: 2,
            width: 9,
            value: 0.0
        }],
        image.clone()
    )
    .is_err());
    let normalize = Op::Normalize {
        mean: vec![0.0; 2],
        std: vec![1.0],
    };
    assert!(run(vec![Op::ToFloat, normalize], image).is_err());
    let garbage = Pipeline {
        ops: vec![Op::Decode {
            max_pixels: 100,
            draft: false,
        }],
    };
    assert!(garbage
        .run(Input::Encoded(b"\xff\xd8\xff\xe0 no end"), 0, 0)
        .is_err());
    assert!(garbage.run(Input::Encoded(b"GIF89a"), 0, 0).is_err());
}

#[test]
fn resize_keeps_a_constant_image_constant_with_every_filter() {
    for filter in [
        Filter::Nearest,
        Filter::Bilinear,
        Filter::Bicubic,
        Filter::Lanczos,
    ] {
        let flat = Image::u8(9, 7, 3, vec![200; 9 * 7 * 3]);
        let out = run(
            vec![Op::Resize {
                size: Size::Exact(4, 12),
                filter,
            }],
            flat,
        )
        .unwrap();
        assert_eq!((out.height, out.width), (4, 12));
        assert_eq!(out.pixels, Pixels::U8(vec![200; 4 * 12 * 3]), "{filter:?}");
    }
}

#[test]
fn random_resized_crop_falls_back_to_the_centre_as_torchvision() {
    let mut random = ItemRandom::new(0, 0);
    let boxed = crate::ops::crop_box(&mut random, 100, 100, (0.99, 1.0), (4.0, 5.0));
    assert_eq!(boxed, (37, 0, 25, 100));
}

#[test]
fn an_image_past_max_image_bytes_goes_to_the_reference_before_it_is_made() {
    let huge = (1 << 31) - 1;
    let pad_to = Op::PadTo {
        height: huge,
        width: huge,
        value: 0.0,
    };
    assert!(run(vec![pad_to], ramp(2, 2, 3)).is_err());
    let pad = Op::Pad {
        top: huge,
        bottom: 0,
        left: 0,
        right: 0,
        value: 0.0,
    };
    assert!(run(vec![pad], ramp(2, 2, 3)).is_err());
    assert!(admit(1 << 15, 1 << 13, 4, 1).is_ok()); // exactly MAX_IMAGE_BYTES
    assert!(admit(1 << 15, 1 << 13, 4, 4).is_err());
    assert!(admit(usize::MAX, 2, 1, 1).is_err()); // overflows: refused, not wrapped
}
