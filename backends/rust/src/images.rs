//! `MapWork.images`: a transforms pipeline run natively on a job's items,
//! without the interpreter; what it does not reproduce goes to the reference.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyTuple};

use dataloader_imaging::pipeline::Input;
use dataloader_imaging::{Image, Op, Pipeline, Pixels};

use crate::attach;
use crate::batch_pool::BatchPool;
use crate::jpeg_build;
use crate::pipeline_record::parse;
use crate::pixel_buffer::PixelBuffer;

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

/// What a job's items became: a whole batch (images stacked natively), or
/// the items for the loader's collate.
pub enum Fetched<'py> {
    Batch(Bound<'py, PyAny>),
    Items(Bound<'py, PyAny>),
}

/// The batch's shape and dtype when every item was made natively and all
/// have one shape and dtype: then they can be laid out in one array.
fn stackable(results: &[Option<Image>]) -> Option<(Vec<usize>, &'static str)> {
    let first = results.first()?.as_ref()?;
    let dtype = match first.pixels {
        Pixels::U8(_) => "uint8",
        Pixels::F32(_) => "float32",
    };
    let same = |image: &Image| {
        image.shape() == first.shape()
            && matches!(
                (&image.pixels, &first.pixels),
                (Pixels::U8(_), Pixels::U8(_)) | (Pixels::F32(_), Pixels::F32(_))
            )
    };
    if !results.iter().all(|r| r.as_ref().is_some_and(same)) {
        return None;
    }
    let mut shape = vec![results.len()];
    shape.extend(first.shape());
    Some((shape, dtype))
}

/// Copy the images into `array` (a C-contiguous NumPy array of the batch's shape
/// and dtype that nobody else holds: `BatchPool`), without the interpreter.
fn fill<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
    results: &[Option<Image>],
) -> PyResult<()> {
    let buffer = PyBuffer::<u8>::get(array).or_else(|_| {
        // A float32 array exports format "f": read its bytes through a u8 view.
        PyBuffer::<u8>::get(&array.call_method1("view", ("uint8",))?)
    })?;
    if !buffer.is_c_contiguous() || buffer.readonly() {
        return Err(PyValueError::new_err(
            "the batch array is not a writable C array",
        ));
    }
    let (start, len) = (buffer.buf_ptr() as usize, buffer.len_bytes());
    attach::detached(py, || {
        // SAFETY: the array is alive (`buffer` holds it) and held by nobody else
        // (`BatchPool::take`) until this returns.
        let out = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len) };
        let mut at = 0;
        for image in results.iter().flatten() {
            let bytes: &[u8] = match &image.pixels {
                Pixels::U8(v) => v,
                Pixels::F32(v) => unsafe {
                    // SAFETY: plain f32s viewed as their bytes.
                    std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 4)
                },
            };
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        }
    });
    Ok(())
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
        let (pipeline, seed) = (&self.pipeline, self.epoch_seed);
        let results: Vec<Option<Image>> = attach::detached(py, || {
            inputs
                .iter()
                .map(|input| {
                    let (owned, word) = input.as_ref()?;
                    pipeline.run(owned.input(), seed, *word).ok()
                })
                .collect()
        });
        let batch = self
            .stack
            .as_ref()
            .and_then(|stack| Some((stack, stackable(&results)?)));
        if let Some((stack, (shape, dtype))) = batch {
            let array = self.batches.take(py, shape, dtype)?;
            fill(py, &array, &results)?;
            let raw = PyList::new(py, &items)?;
            let args = PyTuple::new(py, [raw.as_any(), &array])?;
            return Ok(Fetched::Batch(attach::call(
                py,
                stack.bind(py),
                args.as_any(),
            )?));
        }
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
