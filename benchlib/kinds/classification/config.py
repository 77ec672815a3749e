"""The configuration of one classification run (``train``, ``inference``,
``smooth_inference``): a torchvision model on synthetic tensors or an ImageNet-layout JPEG
folder, and the kind's variants."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from benchlib.inputs import node_limits
from benchlib.inputs.benchmark import Benchmark
from benchlib.inputs.config import CompileMode, RunConfig
from benchlib.inputs.node_limits import MAX_IMAGE_SIDE
from benchlib.inputs.param_paths import missing_data_dir

ClassificationBenchmark = Literal["train", "inference", "smooth_inference"]

#: Input side of models that do not take 224 px images by default.
DEFAULT_IMAGE_SIZE = {"inception_v3": 299}
def _registered_in_source(folder: Path) -> set[str]:
    """The names torchvision's ``@register_model()`` gives the functions of the modules in
    ``folder`` (not its subpackages: detection, video, ... are not classifiers)."""
    found = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and \
                        getattr(decorator.func, "id", "") == "register_model":
                    named = [k.value for k in decorator.keywords if k.arg == "name"] + \
                        list(decorator.args)
                    found.add(named[0].value if named and isinstance(named[0], ast.Constant)
                              else node.name)
    return found


@functools.cache
def classification_models() -> tuple[str, ...]:
    """Names of torchvision's image-classification models (``resnet50``, ``inception_v3``, ...):
    ``torchvision.models.list_models(module=torchvision.models)``, read from torchvision's own
    source, so that checking a params file does not import torchvision.models (2.7 s on the
    2-core VM; tests/test_config.py holds the two equal), else by importing it."""
    spec = importlib.util.find_spec("torchvision")
    if spec is not None and spec.origin is not None:
        with contextlib.suppress(OSError, SyntaxError, ValueError):
            names = _registered_in_source(Path(spec.origin).parent / "models")
            if names:
                return tuple(sorted(names))
    import torchvision

    return tuple(sorted(torchvision.models.list_models(module=torchvision.models)))


class ClassificationConfig(RunConfig):
    """One train / inference / smooth-inference run of a torchvision classification model.

    ``dataset`` is ``synthetic`` (``synthetic_kind`` says whether the tensors are made once on
    the device or by a CPU loader) or ``real`` (an ImageNet-layout JPEG folder in ``data_dir``,
    read from the file system as it goes, or with ``data_source: memory`` read once into memory
    before timing, so that the loader only decodes). ``decode`` says where real JPEGs are
    decoded: in the ``loader`` workers, or on the run's ``device`` (nvJPEG on a GPU; the
    workers only read the files).
    ``iterations`` counts timed iterations after ``warmup``, or ``"epoch"`` for one pass over the
    data (warm-up iterations then come out of that pass).
    """

    benchmark: ClassificationBenchmark = "train"
    model: str = "resnet50"
    image_size: int | None = Field(None, gt=0, le=MAX_IMAGE_SIDE)
    dataset: Literal["synthetic", "real"] = "synthetic"
    synthetic_kind: Literal["device", "loader"] = "device"
    data_dir: str = ""
    data_source: Literal["disk", "memory"] = "disk"
    decode: Literal["loader", "device"] = "loader"
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
                raise ValueError(missing_data_dir(self.data_dir))
        elif self.data_source == "memory":
            raise ValueError("data_source 'memory' reads data_dir's files into memory: it needs "
                             "dataset 'real' (allowed with synthetic data: 'disk')")
        if self.decode == "device" and (self.dataset != "real" or self.data_source != "disk"):
            raise ValueError("decode 'device' decodes data_dir's JPEGs on the run's device: it "
                             "needs dataset 'real' with data_source 'disk' (allowed otherwise: "
                             "'loader')")
        size = self.resolved_image_size
        if self.model == "inception_v3":
            smallest = 299 if self.benchmark == "train" else 75  # the aux head needs 299 px
            if size < smallest:
                raise ValueError(f"image_size {size} too small: inception_v3 {self.benchmark} "
                                 f"needs image_size >= {smallest}")
        if size < 32:
            raise ValueError(f"image_size {size} is below 32 px")
        if self.benchmark == "smooth_inference" and self.scaling == "strong":
            raise ValueError("scaling 'strong' does not apply to smooth_inference (one image per "
                             "iteration per device; batch_size is its noise chunk): use 'weak', or "
                             "iterations 'epoch' to split a fixed set of images over the devices")
        return self

    @model_validator(mode="after")
    def _batch_fits_the_memory(self) -> ClassificationConfig:
        """Refuse a batch whose input tensor alone (float32, 3 channels) needs more than the
        device's memory: a lower bound, the model's activations come on top."""
        side = self.resolved_image_size
        needed = self.device_batch_size * 3 * side * side * 4
        processes = self.processes_here if self.device == "cpu" else 1
        bound, why = node_limits.memory_bound(self.device)
        if needed * processes > bound:
            raise ValueError(f"batch_size {self.batch_size}: one batch of {side} px images takes "
                             f"about {node_limits.size_text(needed)} per device as float32 input "
                             f"alone, more than {why} on device {self.device!r}; choose a "
                             "smaller batch_size or image_size")
        return self

    @property
    def resolved_image_size(self) -> int:
        """The image side actually used: ``image_size`` or the model's default."""
        return self.image_size or DEFAULT_IMAGE_SIZE.get(self.model, 224)


_SMOOTH = ("noise_samples", "sigma")
#: The kind's variants: one notebook each (the registry reads them, :func:`benchlib.registry.shipped`).
VARIANTS = (
    Benchmark("train", "train", ClassificationConfig, "classification", "Training benchmark",
              "Forward, loss, backward and an SGD-with-momentum step per iteration.",
              activity="training", trains=True, ignores=_SMOOTH),
    Benchmark("inference", "inference", ClassificationConfig, "classification",
              "Inference benchmark", "Eval mode, no gradients: one forward pass per batch.",
              activity="inference", ignores=_SMOOTH),
    Benchmark("smooth_inference", "smooth_inference", ClassificationConfig, "classification",
              "Smooth inference benchmark (randomized smoothing)",
              "For each input image, `noise_samples` Gaussian copies (`sigma`) are classified in "
              "chunks of `batch_size` and the class votes counted; one iteration is one input "
              "image.", activity="smooth inference"),
)
