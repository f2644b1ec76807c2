//! libjpeg-turbo (as mozjpeg) driven directly: the whole image, or only the
//! rows and iMCU columns a crop keeps. Either way the kept pixels are the
//! full decode's, bit for bit: libjpeg-turbo's fancy upsampling reads one
//! sample past each side, so the decoded window keeps a margin of whole iMCUs
//! around the box, and every row is still entropy-decoded (a corrupt stream
//! fails as it would decoded whole).

use std::mem;
use std::os::raw::{c_int, c_ulong};

use mozjpeg_sys as ffi;

use crate::Fallback;

/// A box of the decoded image; a JPEG with `scale` > 1 is decoded at 1/`scale`
/// (2, 4 or 8) in the DCT domain, as Pillow's `draft`, and the box is in the
/// scaled image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub top: usize,
    pub left: usize,
    pub height: usize,
    pub width: usize,
    pub scale: usize,
}

impl Region {
    /// Whether the box is inside an image of `height` × `width` and not empty.
    pub fn fits(&self, height: usize, width: usize) -> bool {
        self.height > 0
            && self.width > 0
            && self.top + self.height <= height
            && self.left + self.width <= width
    }
}

/// A decoded JPEG (`channels` is 1 or 3) and the box it holds, if cropped.
pub struct Decoded {
    pub height: usize,
    pub width: usize,
    pub channels: usize,
    pub pixels: Vec<u8>,
    pub region: Option<Region>,
}

extern "C-unwind" fn error_exit(_cinfo: &mut ffi::jpeg_common_struct) {
    // Out of libjpeg without the panic hook; `decode::decode` catches it.
    std::panic::resume_unwind(Box::new("libjpeg error"));
}

/// libjpeg's message hook, silent: a warning (level -1: corrupt entropy data,
/// extraneous bytes...) is counted as libjpeg's own hook counts it, so that
/// `decode` hands the image to the reference.
extern "C-unwind" fn count_warnings(cinfo: &mut ffi::jpeg_common_struct, level: c_int) {
    if level < 0 {
        // SAFETY: libjpeg calls this hook with the `cinfo` whose `err` Session::new
        // set to its boxed error manager, which lives as long as the decompressor.
        unsafe { (*cinfo.err).num_warnings += 1 };
    }
}

/// One decompressor, destroyed however the decode ends.
struct Session {
    cinfo: Box<ffi::jpeg_decompress_struct>,
    _err: Box<ffi::jpeg_error_mgr>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: a Session is only made by Session::new, so `cinfo` went through
        // jpeg_create_decompress; its Box has not moved and `_err`, which
        // `cinfo.common.err` points to, is dropped only after this. libjpeg
        // documents jpeg_destroy as valid in any state, also after error_exit
        // (our unwinding one) left a call part way.
        unsafe { ffi::jpeg_destroy_decompress(&mut self.cinfo) }
    }
}

impl Session {
    fn new(data: &[u8]) -> Session {
        // SAFETY: both structs are plain C data (integers, raw pointers, enums
        // whose 0 is a variant, `Option` of fn pointers), so all-zero is a valid
        // value, as libjpeg's own examples start. They are boxed, so
        // `cinfo.common.err` keeps pointing at the live error manager when the
        // Session moves, and the Session owns both (`_err` outlives the
        // jpeg_destroy in Drop). jpeg_create_decompress gets the real size via
        // mozjpeg-sys. jpeg_mem_src keeps `data`'s pointer: the only caller,
        // `decode`, drops the Session before `data`'s borrow ends. Errors reach
        // `error_exit`, which unwinds (`C-unwind`; the C is built with
        // -fexceptions by mozjpeg-sys's `unwinding` feature).
        unsafe {
            let mut err: Box<ffi::jpeg_error_mgr> = Box::new(mem::zeroed());
            ffi::jpeg_std_error(&mut err);
            err.error_exit = Some(error_exit);
            err.emit_message = Some(count_warnings);
            let mut cinfo: Box<ffi::jpeg_decompress_struct> = Box::new(mem::zeroed());
            cinfo.common.err = &mut *err;
            ffi::jpeg_create_decompress(&mut *cinfo);
            ffi::jpeg_mem_src(&mut cinfo, data.as_ptr(), data.len() as c_ulong);
            Session { cinfo, _err: err }
        }
    }

    fn read_row(&mut self, row: &mut [u8]) -> Result<(), Fallback> {
        let mut pointer = row.as_mut_ptr();
        // SAFETY: `cinfo` is a live decompressor (Session::new). libjpeg writes
        // one scanline of output_width * output_components bytes through
        // `pointer`; every caller passes a row of exactly that length (read_all:
        // output_width * channels; read_region: the width jpeg_crop_scanline set,
        // times channels), and `channels` is output_components for the
        // out_color_space `decode` chose (GRAYSCALE 1, RGB 3). `pointer` is a
        // local that outlives the call; a call in the wrong state is a libjpeg
        // error, which unwinds.
        let read = unsafe { ffi::jpeg_read_scanlines(&mut self.cinfo, &mut pointer, 1) };
        all_rows(read as usize, 1)
    }

    fn skip_rows(&mut self, rows: usize) -> Result<(), Fallback> {
        if rows == 0 {
            return Ok(());
        }
        // SAFETY: a live decompressor; jpeg_skip_scanlines writes no caller
        // memory, stops at the image's end (returning fewer) and reports a wrong
        // state through error_exit, which unwinds.
        let skipped = unsafe { ffi::jpeg_skip_scanlines(&mut self.cinfo, rows as u32) };
        all_rows(skipped as usize, rows)
    }
}

fn all_rows(got: usize, wanted: usize) -> Result<(), Fallback> {
    if got != wanted {
        return Err(Fallback("fewer scanlines than the header promised".into()));
    }
    Ok(())
}

/// Scans (SOS markers) a JPEG may have at most (issue 49): a progressive JPEG
/// of 20,000 scans took 12-13 s per decode. libjpeg-turbo's fuzzers use 500;
/// ordinary progressive files have about ten. More falls back to the reference,
/// which refuses it by name (`dataloader_api.transforms._decode.MAX_JPEG_SCANS`).
pub const MAX_SCANS: usize = 500;

/// SOS markers in `data`: entropy-coded bytes never hold 0xFF 0xDA (a 0xFF there
/// is followed by 0x00 or a restart marker), so each pair is a scan's start,
/// or a byte pair in a metadata segment (an overcount, on the safe side).
pub fn scans(data: &[u8]) -> usize {
    data.windows(2).filter(|pair| pair == &[0xFF, 0xDA]).count()
}

/// Decode `data`; once the size is known, `admit(height, width)` may refuse
/// it, then `region(height, width, true)` is asked for a box, and only that
/// box is returned when it gives one.
pub fn decode(
    data: &[u8],
    admit: impl FnOnce(usize, usize) -> Result<(), Fallback>,
    region: impl FnOnce(usize, usize, bool) -> Option<Region>,
) -> Result<Decoded, Fallback> {
    if scans(data) > MAX_SCANS {
        return Err(Fallback(format!("more than {MAX_SCANS} JPEG scans")));
    }
    let mut session = Session::new(data);
    // SAFETY: a decompressor just created with a memory source over `data`,
    // which outlives `session`; require_image = TRUE. A corrupt header is a
    // libjpeg error, which unwinds (caught by `decode::decode`).
    if unsafe { ffi::jpeg_read_header(&mut session.cinfo, 1) } != 1 {
        return Err(Fallback("no image in the JPEG file".into()));
    }
    let cinfo = &mut session.cinfo;
    let (height, width) = (cinfo.image_height as usize, cinfo.image_width as usize);
    admit(height, width)?;
    let channels = match cinfo.jpeg_color_space {
        ffi::J_COLOR_SPACE::JCS_GRAYSCALE => 1,
        ffi::J_COLOR_SPACE::JCS_YCbCr | ffi::J_COLOR_SPACE::JCS_RGB => 3,
        _ => return Err(Fallback("a CMYK or YCCK JPEG".into())),
    };
    cinfo.out_color_space = if channels == 1 {
        ffi::J_COLOR_SPACE::JCS_GRAYSCALE
    } else {
        ffi::J_COLOR_SPACE::JCS_RGB
    };
    let wanted = region(height, width, true);
    let scale = wanted.map_or(1, |r| r.scale);
    if scale > 1 {
        (cinfo.scale_num, cinfo.scale_denom) = (1, scale as u32);
    }
    // SAFETY: `cinfo` is the live decompressor, after a successful
    // jpeg_read_header; the parameters set above are plain fields libjpeg
    // validates itself (an unsupported scale is an error, which unwinds).
    if unsafe { ffi::jpeg_start_decompress(cinfo) } != 1 {
        return Err(Fallback("a suspended JPEG source".into()));
    }
    let (height, width) = (cinfo.output_height as usize, cinfo.output_width as usize);
    let wanted = wanted.filter(|r| r.fits(height, width));
    if scale > 1 && wanted.is_none() {
        return Err(Fallback("a box outside the scaled image".into()));
    }
    let pixels = match wanted {
        Some(r) if (r.height, r.width) != (height, width) => {
            let (h_factor, v_factor) = (cinfo.max_h_samp_factor, cinfo.max_v_samp_factor);
            read_region(&mut session, r, channels, (h_factor, v_factor))
        }
        _ => read_all(&mut session, height, width * channels),
    }?;
    // SAFETY: the live decompressor after jpeg_start_decompress; it writes no
    // caller memory, and rows left unread are a libjpeg error, which unwinds.
    if unsafe { ffi::jpeg_finish_decompress(&mut session.cinfo) } != 1 {
        return Err(Fallback("a suspended JPEG source".into()));
    }
    // SAFETY: `err` is the Session's boxed error manager (Session::new), alive here.
    if unsafe { (*session.cinfo.common.err).num_warnings } > 0 {
        // What libjpeg-turbo makes of corrupt data depends on its build: the
        // plain-C IDCT and the SIMD one differ on coefficients out of range.
        return Err(Fallback("a corrupt JPEG (libjpeg-turbo warned)".into()));
    }
    let (height, width) = wanted.map_or((height, width), |r| (r.height, r.width));
    Ok(Decoded {
        height,
        width,
        channels,
        pixels,
        region: wanted,
    })
}

fn read_all(session: &mut Session, height: usize, stride: usize) -> Result<Vec<u8>, Fallback> {
    let mut pixels = vec![0u8; height * stride];
    for row in pixels.chunks_exact_mut(stride) {
        session.read_row(row)?;
    }
    Ok(pixels)
}

/// The rows of `r`, decoded from a window that keeps whole iMCUs (two rows of
/// them above, one column each side) around it, so that the upsampler's
/// neighbours are the full decode's; the rows below are skipped but for the
/// last, which makes libjpeg entropy-decode them all.
fn read_region(
    session: &mut Session,
    r: Region,
    channels: usize,
    (h_factor, v_factor): (c_int, c_int),
) -> Result<Vec<u8>, Fallback> {
    let (height, width) = (
        session.cinfo.output_height as usize,
        session.cinfo.output_width as usize,
    );
    let (imcu_w, imcu_h) = (8 * h_factor.max(1) as usize, 8 * v_factor.max(1) as usize);
    let mut x0 = r.left.saturating_sub(imcu_w) as u32;
    let mut window_w = ((r.left + r.width + imcu_w).min(width) - x0 as usize) as u32;
    if (window_w as usize) < width {
        // SAFETY: called after jpeg_start_decompress and before any row is
        // read or skipped, as libjpeg-turbo requires; `x0` and `window_w` are
        // locals (JDIMENSION is u32) it reads and widens to iMCU boundaries in
        // place, and `x0 + window_w <= output_width` (`r.fits` and the `min`
        // above; libjpeg checks it too and errors, which unwinds).
        unsafe { ffi::jpeg_crop_scanline(&mut session.cinfo, &mut x0, &mut window_w) };
    }
    let (x0, window_w) = (x0 as usize, window_w as usize);
    let first_row = r.top.saturating_sub(2 * imcu_h) / imcu_h * imcu_h;
    session.skip_rows(first_row)?;
    let mut scratch = vec![0u8; window_w * channels];
    for _ in first_row..r.top {
        session.read_row(&mut scratch)?;
    }
    let keep = (r.left - x0) * channels..(r.left - x0 + r.width) * channels;
    let mut pixels = Vec::with_capacity(r.height * r.width * channels);
    for _ in 0..r.height {
        session.read_row(&mut scratch)?;
        pixels.extend_from_slice(&scratch[keep.clone()]);
    }
    let below = height - r.top - r.height;
    if below > 0 {
        session.skip_rows(below - 1)?;
        session.read_row(&mut scratch)?;
    }
    Ok(pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_are_counted_by_their_markers() {
        assert_eq!(
            scans(&[0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0xFF, 0x00, 0xFF, 0xDA]),
            2
        );
        assert_eq!(scans(&[0xFF, 0xD8, 0xFF, 0xD9]), 0);
        let many: Vec<u8> = [0xFF, 0xDA].repeat(MAX_SCANS + 1);
        assert!(decode(&many, |_, _| Ok(()), |_, _, _| None).is_err());
    }
}
