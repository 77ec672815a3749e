"""Typed, validated configurations of one benchmark run (what a notebook's parameters hold)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

Precision = Literal["fp32", "tf32", "amp_fp16", "amp_bf16"]
CompileMode = Literal["none", "default", "reduce-overhead", "max-autotune"]
DeviceChoice = Literal["auto", "cuda", "cpu"]
ClassificationBenchmark = Literal["train", "inference", "smooth_inference"]

#: Input side of models that do not take 224 px images by default.
DEFAULT_IMAGE_SIZE = {"inception_v3": 299}


@functools.cache
def classification_models() -> tuple[str, ...]:
    """Names of torchvision's image-classification models (``resnet50``, ``inception_v3``, ...)."""
    import torchvision

    return tuple(sorted(torchvision.models.list_models(module=torchvision.models)))


class RunConfig(BaseModel):
    """Parameters every benchmark notebook shares."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign: str = "adhoc"
    cluster: str = ""
    device: DeviceChoice = "auto"
    precision: Precision = "fp32"
    iterations: PositiveInt | Literal["epoch"] = 50
    warmup: NonNegativeInt = 5
    batch_size: PositiveInt = 32
    num_workers: NonNegativeInt = 4
    breakdown: bool = True
    seed: int = 0


class ClassificationConfig(RunConfig):
    """One train / inference / smooth-inference run of a torchvision classification model.

    ``dataset`` is ``synthetic`` (``synthetic_kind`` says whether the tensors are made once on
    the device or by a CPU loader) or ``real`` (an ImageNet-layout JPEG folder in ``data_dir``).
    ``iterations`` counts timed iterations after ``warmup``, or ``"epoch"`` for one pass over the
    data (warm-up iterations then come out of that pass).
    """

    benchmark: ClassificationBenchmark = "train"
    model: str = "resnet50"
    image_size: PositiveInt | None = None
    dataset: Literal["synthetic", "real"] = "synthetic"
    synthetic_kind: Literal["device", "loader"] = "device"
    data_dir: str = ""
    num_classes: PositiveInt = 1000
    synthetic_samples: PositiveInt = 1024
    channels_last: bool = False
    compile: CompileMode = "none"
    noise_samples: PositiveInt = 100
    sigma: PositiveFloat = 0.25

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        known = classification_models()
        if value not in known:
            close = [m for m in known if m.startswith(value[:4])] or list(known[:8])
            raise ValueError(
                f"unknown model {value!r}; allowed: any torchvision classification model, "
                f"e.g. {', '.join(close[:8])} ({len(known)} in all)"
            )
        return value

    @model_validator(mode="after")
    def _real_data_needs_folder(self) -> ClassificationConfig:
        if self.dataset == "real":
            if not self.data_dir:
                raise ValueError("data_dir is empty: dataset 'real' needs an ImageNet-layout "
                                 "image folder")
            if not Path(self.data_dir).is_dir():
                raise ValueError(f"data_dir {self.data_dir!r} is not a directory")
        size = self.resolved_image_size
        if self.model == "inception_v3":
            smallest = 299 if self.benchmark == "train" else 75  # the aux head needs 299 px
            if size < smallest:
                raise ValueError(f"image_size {size} too small: inception_v3 {self.benchmark} "
                                 f"needs image_size >= {smallest}")
        if size < 32:
            raise ValueError(f"image_size {size} is below 32 px")
        return self

    @property
    def resolved_image_size(self) -> int:
        """The image side actually used: ``image_size`` or the model's default."""
        return self.image_size or DEFAULT_IMAGE_SIZE.get(self.model, 224)


#: Which config class validates the parameters of each shipped notebook.
NOTEBOOK_CONFIGS: dict[str, tuple[type[RunConfig], dict[str, object]]] = {
    "train": (ClassificationConfig, {"benchmark": "train"}),
    "inference": (ClassificationConfig, {"benchmark": "inference"}),
    "smooth_inference": (ClassificationConfig, {"benchmark": "smooth_inference"}),
}


class ConfigError(ValueError):
    """Invalid configuration; the message names the file, field, bad value and what is allowed."""


def describe_validation_error(error: Exception, where: str = "",
                              fields: Iterable[str] = ()) -> list[str]:
    """Turn a pydantic ValidationError into one readable line per bad field.

    ``fields`` are the model's field names, used to name the field of cross-field checks.
    """
    fields = set(fields)
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return [f"{where}{error}"]
    lines = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if not field:  # a check across fields: its message starts with the field's name
            first = re.match(r"\w+", message)
            field = first.group(0) if first and first.group(0) in fields else "point"
            lines.append(f"{where}{field}: {message}")
        elif item["type"] == "extra_forbidden":
            lines.append(f"{where}{field}: unknown parameter")
        else:
            lines.append(f"{where}{field}: bad value {item['input']!r}: {message}")
    return lines

