"""Image transforms as data: a pipeline every backend runs the same way.

>>> from dataloader_api import DataLoader, transforms as T
>>> pipeline = T.Compose([T.Decode(), T.ToRGB(), T.RandomResizedCrop(224),
...                       T.RandomHFlip(), T.ToFloat(),
...                       T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
...                       T.ToCHW()], on=0)
>>> loader = DataLoader(jpeg_label_pairs, batch_size=64, num_workers=2,  # doctest: +SKIP
...                     transform=pipeline, collate_fn=T.ImageCollate(on=0), seed=0)

The reference execution uses Pillow (``pip install "dataloader-api[images]"``)
and NumPy. Random ops draw from a stream keyed by the loader's seed, the
epoch and the item's index: the same seed gives the same images on every
backend and worker count.
"""

from ._collate_images import ImageCollate, stack_images
from ._errors import ImageDecodeError, TransformError
from ._op_apply import RandomApply, RandomChoice, RandomOrder
from ._op_blur import GaussianBlur
from ._op_color import AdjustBrightness, AdjustContrast, AdjustHue, AdjustSaturation, ColorJitter
from ._op_erasing import RandomErasing
from ._op_point import (
    RandomAdjustSharpness,
    RandomAutocontrast,
    RandomEqualize,
    RandomGrayscale,
    RandomPosterize,
    RandomSolarize,
)
from ._ops import (
    INTERPOLATIONS,
    PADDING_MODES,
    CenterCrop,
    Crop,
    Decode,
    HFlip,
    Normalize,
    Op,
    Pad,
    PadTo,
    RandomCrop,
    RandomHFlip,
    RandomResizedCrop,
    RandomVFlip,
    Resize,
    Rotate90,
    ToCHW,
    ToFloat,
    ToGray,
    ToHWC,
    ToRGB,
    VFlip,
    op_from_dict,
)  # fmt: skip
from ._pipeline import BoundPipeline, Compose
from ._random import ItemRandom
from ._reference import TOLERANCES

__all__ = [
    "INTERPOLATIONS",
    "PADDING_MODES",
    "TOLERANCES",
    "AdjustBrightness",
    "AdjustContrast",
    "AdjustHue",
    "AdjustSaturation",
    "BoundPipeline",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "Crop",
    "Decode",
    "GaussianBlur",
    "HFlip",
    "ImageCollate",
    "ImageDecodeError",
    "ItemRandom",
    "Normalize",
    "Op",
    "Pad",
    "PadTo",
    "RandomAdjustSharpness",
    "RandomApply",
    "RandomAutocontrast",
    "RandomChoice",
    "RandomCrop",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHFlip",
    "RandomOrder",
    "RandomPosterize",
    "RandomResizedCrop",
    "RandomSolarize",
    "RandomVFlip",
    "Resize",
    "Rotate90",
    "ToCHW",
    "ToFloat",
    "ToGray",
    "ToHWC",
    "ToRGB",
    "TransformError",
    "VFlip",
    "op_from_dict",
    "stack_images",
]
