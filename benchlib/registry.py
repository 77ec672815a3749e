"""The benchmark registry: every benchmark benchlib ships, in one place.

Each entry names the notebook (``notebooks/<notebook>.ipynb``), the ``benchmark`` value its
records carry, the config class that validates its parameters, its kind (``module:attribute``
of a :class:`benchlib.kinds.Kind`, loaded with importlib when first asked for, so that lower
layers reach a kind without importing upward) and its title and description (the notebook's
heading). The sweep, the launcher, the record builder, the notebook generator and the report
take what differs between benchmarks from here: adding a benchmark is one entry here plus its
kind and workload (see docs/architecture.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from benchlib.inputs.config import ClassificationConfig, CommonConfig
from benchlib.inputs.lm_config import LanguageModelConfig
from benchlib.inputs.probe_config import AllReduceConfig, NodeProbeConfig
from benchlib.inputs.unet3d_config import UNet3DPredictConfig, UNet3DTrainConfig

#: A :class:`benchlib.kinds.Kind` (typed ``Any`` here: the registry never imports that layer).
Kind = Any

_CLASSIFICATION = "benchlib.kinds.classification:CLASSIFICATION"
_LANGUAGE_MODEL = "benchlib.kinds.language_model:LANGUAGE_MODEL"


@dataclass(frozen=True)
class Benchmark:
    """One shipped benchmark notebook."""

    notebook: str
    benchmark: str
    config: type[CommonConfig]
    kind_name: str
    title: str
    description: str

    @property
    def fixed(self) -> dict[str, object]:
        """Parameters the notebook fixes (not the user): its ``benchmark``."""
        return {"benchmark": self.benchmark}

    @property
    def kind(self) -> Kind:
        """The kind object (imported on first use)."""
        return _load(self.kind_name)


@cache
def _load(name: str) -> Kind:
    module, attribute = name.split(":")
    return getattr(importlib.import_module(module), attribute)


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("train", "train", ClassificationConfig, _CLASSIFICATION, "Training benchmark",
              "Forward, loss, backward and an SGD-with-momentum step per iteration."),
    Benchmark("inference", "inference", ClassificationConfig, _CLASSIFICATION,
              "Inference benchmark", "Eval mode, no gradients: one forward pass per batch."),
    Benchmark("smooth_inference", "smooth_inference", ClassificationConfig, _CLASSIFICATION,
              "Smooth inference benchmark (randomized smoothing)",
              "For each input image, `noise_samples` Gaussian copies (`sigma`) are classified in "
              "chunks of `batch_size` and the class votes counted; one iteration is one input "
              "image."),
    Benchmark("unet3d_train", "unet3d_train", UNet3DTrainConfig,
              "benchlib.kinds.unet3d:UNET3D_TRAIN", "3D U-Net training benchmark",
              "Adam steps of a 3D U-Net on random patches of an EM volume (CREMI layout: "
              "`volumes/raw`, `volumes/labels/neuron_ids`) with flips and transposes, against "
              "affinity or boundary targets made from the labels (`dataset: real`), or on tensors "
              "made once on the device (`dataset: synthetic`). Reported as iterations/minute, "
              "days to 100k iterations and output voxels/s."),
    Benchmark("unet3d_predict", "unet3d_predict", UNet3DPredictConfig,
              "benchlib.kinds.unet3d:UNET3D_PREDICT", "3D U-Net blockwise prediction benchmark",
              "The whole volume is predicted block by block: each output block is read with a "
              "halo of context (zero outside the volume), passed through the network and "
              "written once into `output`. Reading runs in `num_workers` threads ahead of the "
              "compute and writing in a thread behind it. Reported as megavoxels/s and hours "
              "per teravoxel."),
    Benchmark("lm_train", "lm_train", LanguageModelConfig, _LANGUAGE_MODEL,
              "Language model training benchmark",
              "AdamW steps of a GPT-2-style decoder-only transformer (pre-norm blocks, causal "
              "`scaled_dot_product_attention`, tied head) on sequences of `sequence_length` "
              "tokens: random ids made once on the device (`dataset: synthetic`) or random "
              "windows of a uint16 token file (`dataset: tokens`, nanoGPT's `.bin` layout). "
              "Reported as tokens/s; MFU from the model FLOPs per token (6N plus attention)."),
    Benchmark("lm_inference", "lm_inference", LanguageModelConfig, _LANGUAGE_MODEL,
              "Language model inference benchmark",
              "Eval mode, no gradients: one forward pass of a GPT-2-style transformer over a "
              "batch of `sequence_length`-token sequences (the prefill of a whole prompt, no "
              "key-value cache). Reported as tokens/s."),
    Benchmark("allreduce", "probe_allreduce", AllReduceConfig, "benchlib.kinds.probes:ALLREDUCE",
              "All-reduce probe: bus bandwidth over message sizes",
              "The collective that data-parallel training waits for, timed as nccl-tests times "
              "it."),
    Benchmark("node_probe", "probe_node", NodeProbeConfig, "benchlib.kinds.probes:NODE_PROBE",
              "Node probe: what this node can do at most",
              "Matrix-multiply TFLOP/s per precision, memory and host-link bandwidth, JPEG "
              "decode against loader workers, data directory read throughput."),
)


def by_notebook(name: str) -> Benchmark | None:
    """The entry of ``notebooks/<name>.ipynb`` (None for a notebook benchlib does not ship)."""
    return next((b for b in BENCHMARKS if b.notebook == name), None)


def notebook_configs() -> dict[str, tuple[type[CommonConfig], dict[str, object]]]:
    """Notebook name -> (config class, fixed parameters)."""
    return {b.notebook: (b.config, b.fixed) for b in BENCHMARKS}


def config_class(name: str) -> type[CommonConfig]:
    """The registered config class called ``name`` (KeyError naming the known ones)."""
    classes = {b.config.__name__: b.config for b in BENCHMARKS}
    if name not in classes:
        raise KeyError(f"{name} is not a registered config (known: {', '.join(sorted(classes))})")
    return classes[name]


def kind_of(config: CommonConfig) -> Kind:
    """The kind that runs ``config`` (the entry of its config class and ``benchmark``)."""
    benchmark = getattr(config, "benchmark", None)
    for entry in BENCHMARKS:
        if type(config) is entry.config and entry.benchmark == benchmark:
            return entry.kind
    raise KeyError(f"no registered benchmark runs a {type(config).__name__} "
                   f"(benchmark {benchmark!r})")


def kind_named(benchmark: object) -> Kind | None:
    """The kind of records whose ``benchmark`` column is ``benchmark`` (None when no
    registered benchmark has that value)."""
    entry = next((b for b in BENCHMARKS if b.benchmark == benchmark), None)
    return entry.kind if entry is not None else None


def run_target(config: CommonConfig) -> str:
    """``module:function`` that runs ``config`` (its kind's run function)."""
    return kind_of(config).run


NOTEBOOK_CONFIGS = notebook_configs()
