//! A batch written as its images are made: each image is copied into its slot
//! of the batch array while it is still in cache, and its own buffer is freed
//! at once (instead of a batch's worth of images kept, then copied from memory).

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use dataloader_imaging::{Image, Pixels};

/// What became of one item of a job that stacks its batch natively.
pub enum Placed {
    /// Written into its slot of the batch array.
    InBatch,
    /// Made natively, but not of the batch's shape or dtype.
    Image(Image),
    /// For the reference to make.
    Reference,
}

/// The shape and dtype every image of the batch has: the first one's.
#[derive(Clone, Copy)]
pub struct Like {
    height: usize,
    width: usize,
    channels: usize,
    chw: bool,
    float: bool,
}

impl Like {
    pub fn of(image: &Image) -> Like {
        Like {
            height: image.height,
            width: image.width,
            channels: image.channels,
            chw: image.chw,
            float: matches!(image.pixels, Pixels::F32(_)),
        }
    }

    fn matches(&self, image: &Image) -> bool {
        Like::of(image).key() == self.key()
    }

    /// Whether `image` (HWC), laid out as CHW, is like the batch's images.
    pub fn matches_as_chw(&self, image: &Image) -> bool {
        let chw = Like {
            chw: true,
            ..Like::of(image)
        };
        !image.chw && chw.key() == self.key()
    }

    fn key(&self) -> (usize, usize, usize, bool, bool) {
        (self.height, self.width, self.channels, self.chw, self.float)
    }

    /// The batch array's shape and dtype for `items` images.
    pub fn batch(&self, items: usize) -> (Vec<usize>, &'static str) {
        let image = if self.chw {
            [self.channels, self.height, self.width]
        } else {
            [self.height, self.width, self.channels]
        };
        let dtype = if self.float { "float32" } else { "uint8" };
        (vec![items, image[0], image[1], image[2]], dtype)
    }

    /// An image of this shape back from its slot (when the batch is not stacked after all).
    pub fn image(&self, bytes: &[u8]) -> Image {
        let (h, w, c) = (self.height, self.width, self.channels);
        let mut image = if self.float {
            let values = bytes.chunks_exact(4);
            Image::f32(
                h,
                w,
                c,
                values
                    .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
            )
        } else {
            Image::u8(h, w, c, bytes.to_vec())
        };
        image.chw = self.chw;
        image
    }
}

/// The bytes of a batch array nobody else holds (`BatchPool::take`), as slots.
pub struct Slots {
    start: usize,
    slot: usize,
    _buffer: PyBuffer<u8>,
}

impl Slots {
    /// `array`'s memory, cut into `items` slots; the array stays alive with this.
    pub fn of(array: &Bound<'_, PyAny>, items: usize) -> PyResult<Slots> {
        let buffer = PyBuffer::<u8>::get(array).or_else(|_| {
            // A float32 array exports format "f": read its bytes through a u8 view.
            PyBuffer::<u8>::get(&array.call_method1("view", ("uint8",))?)
        })?;
        if !buffer.is_c_contiguous() || buffer.readonly() || items == 0 {
            return Err(PyValueError::new_err(
                "the batch array is not a writable C array",
            ));
        }
        Ok(Slots {
            start: buffer.buf_ptr() as usize,
            slot: buffer.len_bytes() / items,
            _buffer: buffer,
        })
    }

    /// Slot `at`'s bytes, for a pipeline to write its last op's result into.
    ///
    /// # Safety
    /// As for [`Slots::place`]: `at` is below the slot count, and nothing else
    /// reads or writes slot `at` while the slice is alive.
    #[allow(clippy::mut_from_ref)] // disjoint slots of memory only this job holds
    pub unsafe fn slot(&self, at: usize) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.address(at), self.slot)
    }

    /// Slot `at`'s bytes (to take an image back out).
    ///
    /// # Safety
    /// `at` is below the slot count, and nothing writes slot `at` while the
    /// slice is alive.
    pub unsafe fn read(&self, at: usize) -> &[u8] {
        std::slice::from_raw_parts(self.address(at), self.slot)
    }

    fn address(&self, at: usize) -> *mut u8 {
        (self.start + at * self.slot) as *mut u8
    }

    /// Put `image` into slot `at` if it is `like` the batch's, freeing it.
    ///
    /// # Safety
    /// `at` is below the slot count, nothing else reads or writes slot `at`
    /// meanwhile, and nobody but this job holds the array (`BatchPool::take`).
    pub unsafe fn place(&self, at: usize, image: Image, like: &Like) -> Placed {
        if !like.matches(&image) {
            return Placed::Image(image);
        }
        let bytes: &[u8] = match &image.pixels {
            Pixels::U8(v) => v,
            // SAFETY: plain f32s viewed as their bytes.
            Pixels::F32(v) => std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 4),
        };
        // Equal by `like`: the array's shape is the batch's (`Like::batch`).
        assert_eq!(bytes.len(), self.slot, "an image the size of its slot");
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address(at), self.slot);
        Placed::InBatch
    }
}
