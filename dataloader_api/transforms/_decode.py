"""``Decode``: the format sniffed from the first bytes, the size checked before
the pixels are decoded, Pillow's errors turned into ``ImageDecodeError``."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._errors import ImageDecodeError
from ._op_convert import Decode

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["MAX_JPEG_SCANS", "decode", "sniff"]

#: Scans (SOS markers) a JPEG may have at most (issue 49): a progressive JPEG of
#: 20,000 scans took 12-13 s per decode; libjpeg-turbo's fuzzers stop at 500, and
#: ordinary progressive files have about ten. Pillow has no such limit, so the
#: markers are counted first (0xFF 0xDA never occurs in entropy-coded data); the
#: rust backend counts them alike (``imaging/src/jpeg.rs``, ``MAX_SCANS``).
MAX_JPEG_SCANS = 500

# Pillow modes and the channels they decode to; others are refused by name.
_MODES = {"1": "L", "L": "L", "LA": "LA", "RGB": "RGB", "RGBA": "RGBA", "CMYK": "RGB",
          "YCbCr": "RGB", "PA": "RGBA", "La": "LA", "RGBa": "RGBA"}  # fmt: skip


def sniff(data: bytes | bytearray | memoryview) -> str | None:
    """The format of encoded bytes by their signature: "JPEG", "PNG", "WEBP" or None."""
    head = bytes(data[:12])
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def _webp_supported() -> bool:
    if not _WEBP:
        from PIL import features

        _WEBP.append(bool(features.check("webp")))
    return _WEBP[0]


_WEBP: list[bool] = []  # whether Pillow reads WebP, checked on the first WebP


def _image_class(kind: str) -> Any:
    """Pillow's reader of ``kind`` (what ``sniff`` names)."""
    if kind == "JPEG":
        from PIL.JpegImagePlugin import JpegImageFile

        return JpegImageFile
    if kind == "PNG":
        from PIL.PngImagePlugin import PngImageFile

        return PngImageFile
    from PIL.WebPImagePlugin import WebPImageFile

    return WebPImageFile


def decode(
    op: Decode,
    data: bytes | bytearray | memoryview,
    index: Any,
    scale_for: Callable[[int, int], int] | None = None,
) -> Any:
    """An HWC ``uint8`` array with the image's channels (see ``Decode``); a JPEG
    at 1/``scale_for(height, width)`` scale when that is given and above 1."""
    kind = sniff(data)
    if kind == "WEBP" and not _webp_supported():
        raise ImageDecodeError(
            index, "this Pillow was built without WebP support (as its cp313t wheels are)"
        )
    if kind is None:
        start = bytes(data[:8])
        raise ImageDecodeError(
            index, f"the bytes are not a JPEG, PNG or WebP image (they start with {start!r})"
        )
    whole = data if isinstance(data, (bytes, bytearray)) else bytes(data)
    if kind == "JPEG" and (scans := whole.count(b"\xff\xda")) > MAX_JPEG_SCANS:
        raise ImageDecodeError(
            index, f"the JPEG image has {scans} scans, more than the {MAX_JPEG_SCANS} allowed"
        )
    try:
        # The format's own class, not Image.open: Pillow's global bomb limit
        # (Image.MAX_IMAGE_PIXELS) would override Decode(max_pixels), checked here.
        with _image_class(kind)(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > op.max_pixels:
                raise ImageDecodeError(
                    index,
                    f"the {kind} image is {width}x{height} = {width * height} pixels, more than "
                    f"Decode(max_pixels={op.max_pixels}) allows",
                )
            mode = image.mode
            if mode == "P":
                mode = "RGBA" if "transparency" in image.info else "RGB"
            target = _MODES.get(mode)
            if target is None:
                raise ImageDecodeError(
                    index,
                    f"{kind} images of Pillow mode {image.mode!r} are not supported: Decode "
                    "gives 8-bit images; open such files yourself (np.asarray(PIL.Image.open("
                    "...))), scale them to uint8 or float32, and pass the arrays to a Compose "
                    "without Decode",
                )
            scale = scale_for(height, width) if scale_for and kind == "JPEG" else 1
            if scale > 1:
                image.draft(image.mode, (width // scale, height // scale))
                scaled = (-(-width // scale), -(-height // scale))
                if image.size != scaled:
                    raise RuntimeError(f"Pillow's draft gave {image.size}, not {scaled}")
            image.load()
            pixels = np.array(image if image.mode == target else image.convert(target))
    except ImageDecodeError:
        raise
    except (OSError, SyntaxError, ValueError, EOFError) as error:
        raise ImageDecodeError(index, f"cannot decode the {kind} image: {error}") from error
    return pixels[:, :, None] if pixels.ndim == 2 else pixels
