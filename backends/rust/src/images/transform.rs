//! `MapWork.images`: a transforms pipeline run natively on a job's items,
//! without the interpreter; what it does not reproduce goes to the reference.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyTuple};

use dataloader_imaging::pipeline::Input;
use dataloader_imaging::{Image, Op, Pipeline};

use crate::images::batch_pool::BatchPool;
use crate::images::batch_slots::{Like, Placed, Slots};
use crate::images::jpeg_build;
use crate::images::pipeline_record::parse;
use crate::images::pixel_buffer::PixelBuffer;
use crate::interp::attach;

/// An item's image copied out of Python, or None when the reference must run it.
pub enum Owned {
    Encoded(Vec<u8>),
    Decoded(Image),
}

impl Owned {
    fn input(&self) -> Input<'_> {
        match self {
            Owned::Encoded(bytes) => Input::Encoded(bytes),
            Owned::Decoded(image) => Input::Decoded(image.clone()),
        }
    }
}

fn array_shape(shape: &[usize]) -> Option<(usize, usize, usize)> {
    match *shape {
        [h, w] => Some((h, w, 1)),
        [h, w, c] => Some((h, w, c)),
        _ => None,
    }
}

/// The image as the pipeline takes it; None for what only the reference reads
/// (a Pillow image, another dtype, a non-int index...).
pub fn take(py: Python<'_>, image: &Bound<'_, PyAny>, encoded: bool) -> Option<Owned> {
    if encoded {
        if let Ok(bytes) = image.cast::<PyBytes>() {
            return Some(Owned::Encoded(bytes.as_bytes().to_vec()));
        }
        if image.is_instance_of::<PyByteArray>() || image.hasattr("__buffer__").unwrap_or(false) {
            let buffer = PyBuffer::<u8>::get(image).ok()?;
            return buffer.to_vec(py).ok().map(Owned::Encoded);
        }
        return None;
    }
    if let Ok(buffer) = PyBuffer::<u8>::get(image) {
        let (h, w, c) = array_shape(buffer.shape())?;
        return Some(Owned::Decoded(Image::u8(h, w, c, buffer.to_vec(py).ok()?)));
    }
    let buffer = PyBuffer::<f32>::get(image).ok()?;
    let (h, w, c) = array_shape(buffer.shape())?;
    Some(Owned::Decoded(Image::f32(h, w, c, buffer.to_vec(py).ok()?)))
}

/// The 64-bit word an int index keys the random numbers with (`index_word`).
pub fn index_word(index: &Bound<'_, PyAny>) -> Option<u64> {
    index
        .extract::<i64>()
        .ok()
        .map(|i| i as u64)
        .or_else(|| index.extract::<u64>().ok())
}

/// `MapWork.images` read once per epoch.
pub struct ImageJobs {
    fetch: Py<PyAny>,
    pipeline: Pipeline,
    encoded: bool,
    epoch_seed: u64,
    image_of: Py<PyAny>,
    put: Py<PyAny>,
    apply: Py<PyAny>,
    /// `images.stack(items, array)`: the batch, when the collate is `ImageCollate`.
    stack: Option<Py<PyAny>>,
    asarray: Py<PyAny>,
    batches: BatchPool,
}

/// A job's images: the batch array holding all of them, or each image
/// (None: the reference's to make) for the loader's collate.
enum Made<'py> {
    Batch(Bound<'py, PyAny>),
    Items(Vec<Option<Image>>),
}

/// What a job's items became: a whole batch (images stacked natively), or
/// the items for the loader's collate.
pub enum Fetched<'py> {
    Batch(Bound<'py, PyAny>),
    Items(Bound<'py, PyAny>),
}

impl ImageJobs {
    pub fn read(images: &Bound<'_, PyAny>) -> PyResult<ImageJobs> {
        let py = images.py();
        let record = images.getattr("pipeline")?;
        let pipeline = parse(&record)?;
        let encoded = matches!(pipeline.ops.first(), Some(Op::Decode { .. }));
        if encoded {
            jpeg_build::warn_without_simd(py)?;
        }
        Ok(ImageJobs {
            encoded,
            pipeline,
            fetch: images.getattr("fetch")?.unbind(),
            epoch_seed: images.getattr("epoch_seed")?.extract::<u64>()?,
            image_of: images.getattr("image_of")?.unbind(),
            put: images.getattr("put")?.unbind(),
            apply: images.getattr("apply")?.unbind(),
            stack: images
                .getattr_opt("stack")?
                .filter(|stack| !stack.is_none())
                .map(Bound::unbind),
            asarray: py.import("numpy")?.getattr("asarray")?.unbind(),
            batches: BatchPool::new(py)?,
        })
    }

    /// The job's images, natively where the pipeline can (None: the
    /// reference's to make). With `stack`, the first image gives the batch's
    /// shape and the rest go into their slots of the batch array as each is
    /// made (`batch_slots`); all of them there is the whole batch.
    fn make<'py>(&self, py: Python<'py>, inputs: &[Option<(Owned, u64)>]) -> PyResult<Made<'py>> {
        let (pipeline, seed) = (&self.pipeline, self.epoch_seed);
        let run = |input: &Option<(Owned, u64)>| {
            let (owned, word) = input.as_ref()?;
            pipeline.run(owned.input(), seed, *word).ok()
        };
        let first = match (&self.stack, inputs.first()) {
            (Some(_), Some(input)) => attach::detached(py, || run(input)),
            _ => None,
        };
        let Some(first) = first else {
            // Nothing to stack: every image is an item for the loader's collate.
            let skip = usize::from(self.stack.is_some() && !inputs.is_empty());
            let mut results: Vec<Option<Image>> = vec![None; skip];
            results.extend(attach::detached(py, || {
                inputs[skip..].iter().map(run).collect::<Vec<_>>()
            }));
            return Ok(Made::Items(results));
        };
        let like = Like::of(&first);
        let (shape, dtype) = like.batch(inputs.len());
        let array = self.batches.take(py, shape, dtype)?;
        let slots = Slots::of(&array, inputs.len())?;
        let placed: Vec<Placed> = attach::detached(py, || {
            // SAFETY: each slot is written once, by this job alone, and nobody
            // else holds the array (`BatchPool::take`) until the job returns.
            let mut placed = vec![unsafe { slots.place(0, first, &like) }];
            for (at, input) in inputs.iter().enumerate().skip(1) {
                let Some((owned, word)) = input else {
                    placed.push(Placed::Reference);
                    continue;
                };
                // A last ToChw writes straight into the slot.
                let slot = |image: &Image| {
                    like.matches_as_chw(image)
                        // SAFETY: `at` < inputs.len(), the slot count; this job
                        // alone touches slot `at`, and the slice lives only while
                        // run_into writes the image into it, before anything
                        // else (place, read) touches slot `at`.
                        .then(|| unsafe { slots.slot(at) })
                };
                placed.push(match pipeline.run_into(owned.input(), seed, *word, slot) {
                    Ok(None) => Placed::InBatch,
                    // SAFETY: `at` < inputs.len(), the slot count; the slice of
                    // `slot` (if any) is gone with run_into, this job alone
                    // writes slot `at`, and nobody else holds the array
                    // (`BatchPool::take`) until the job returns.
                    Ok(Some(image)) => unsafe { slots.place(at, image, &like) },
                    Err(_) => Placed::Reference,
                });
            }
            placed
        });
        if placed.iter().all(|p| matches!(p, Placed::InBatch)) {
            return Ok(Made::Batch(array));
        }
        // Not one batch after all: the images written to their slots come back out.
        let results = placed.into_iter().enumerate().map(|(at, p)| match p {
            // SAFETY: the job wrote its slots above and writes none now.
            Placed::InBatch => Some(like.image(unsafe { slots.read(at) })),
            Placed::Image(image) => Some(image),
            Placed::Reference => None,
        });
        Ok(Made::Items(results.collect()))
    }

    /// The job's items through the pipeline: natively without the
    /// interpreter where it can, by the reference (`apply`) elsewhere; with
    /// `stack`, the whole batch when every image was made natively.
    pub fn fetch<'py>(
        &self,
        py: Python<'py>,
        argument: &Bound<'py, PyAny>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Fetched<'py>> {
        let items = attach::call(
            py,
            self.fetch.bind(py),
            PyTuple::new(py, [argument])?.as_any(),
        )?;
        let indices: Vec<Bound<'py, PyAny>> = indices.try_iter()?.collect::<PyResult<_>>()?;
        let items: Vec<Bound<'py, PyAny>> = items.try_iter()?.collect::<PyResult<_>>()?;
        if items.len() != indices.len() {
            return Err(PyValueError::new_err(format!(
                "__getitems__ returned {} items for {} indices, so transform= cannot pair them \
                 with their indices",
                items.len(),
                indices.len()
            )));
        }
        let mut inputs = Vec::with_capacity(items.len());
        for (index, item) in indices.iter().zip(&items) {
            // With its index, so an error names the item as the reference's does.
            let image = attach::call(
                py,
                self.image_of.bind(py),
                PyTuple::new(py, [item, index])?.as_any(),
            )?;
            let word = if self.pipeline.random() {
                index_word(index)
            } else {
                Some(0)
            };
            inputs.push(word.and_then(|w| take(py, &image, self.encoded).map(|o| (o, w))));
        }
        let results = match self.make(py, &inputs)? {
            Made::Batch(array) => {
                let stack = self.stack.as_ref().expect("a batch only with `stack`");
                let raw = PyList::new(py, &items)?;
                let args = PyTuple::new(py, [raw.as_any(), &array])?;
                let batch = attach::call(py, stack.bind(py), args.as_any())?;
                return Ok(Fetched::Batch(batch));
            }
            Made::Items(results) => results,
        };
        let out = PyList::empty(py);
        for ((index, item), result) in indices.iter().zip(&items).zip(results) {
            let transformed = match result {
                Some(image) => {
                    let buffer = Bound::new(py, PixelBuffer::new(image))?;
                    let array = self.asarray.bind(py).call1((buffer,))?;
                    attach::call(
                        py,
                        self.put.bind(py),
                        PyTuple::new(py, [item, &array])?.as_any(),
                    )?
                }
                None => attach::call(
                    py,
                    self.apply.bind(py),
                    PyTuple::new(py, [index, item])?.as_any(),
                )?,
            };
            out.append(transformed)?;
        }
        Ok(Fetched::Items(out.into_any()))
    }
}

/// `_native.run_pipeline(record, epoch_seed, index, image)`: one item natively,
/// or None where the reference would have to run it (for tests and tools).
#[pyfunction]
pub fn run_pipeline<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyDict>,
    epoch_seed: u64,
    index: &Bound<'py, PyAny>,
    image: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let pipeline = parse(record.as_any())?;
    let encoded = matches!(pipeline.ops.first(), Some(Op::Decode { .. }));
    let (Some(owned), Some(word)) = (take(py, image, encoded), index_word(index)) else {
        return Ok(None);
    };
    let result = attach::detached(py, || pipeline.run(owned.input(), epoch_seed, word).ok());
    match result {
        Some(image) => {
            let buffer = Bound::new(py, PixelBuffer::new(image))?;
            Ok(Some(
                py.import("numpy")?.getattr("asarray")?.call1((buffer,))?,
            ))
        }
        None => Ok(None),
    }
}
