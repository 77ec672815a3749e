"""The benchmark registry: every benchmark benchlib ships, in one place.

Each entry names the notebook (``notebooks/<notebook>.ipynb``), the ``benchmark`` value its
records carry, the config class that validates its parameters, the function the launcher runs
(``module:function``, imported only when a run starts), its title and description (the
notebook's heading) and the summaries its records feed. The sweep, the launcher, the notebook
generator and the report take their lists from here: adding a benchmark is one entry here plus
its workload module (see docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from benchlib.inputs.config import ClassificationConfig, CommonConfig
from benchlib.inputs.probe_config import AllReduceConfig, NodeProbeConfig
from benchlib.inputs.unet3d_config import UNet3DPredictConfig, UNet3DTrainConfig

#: The summary notebooks, in the order the report lists them.
SUMMARIES = ("summary_scaling", "summary_comparisons", "summary_breakdown", "summary_projection",
             "summary_node")
_WORKLOAD_SUMMARIES = SUMMARIES


@dataclass(frozen=True)
class Benchmark:
    """One shipped benchmark notebook."""

    notebook: str
    benchmark: str
    config: type[CommonConfig]
    run: str
    title: str
    description: str
    kind: Literal["workload", "probe"] = "workload"
    summaries: tuple[str, ...] = field(default=_WORKLOAD_SUMMARIES)

    @property
    def fixed(self) -> dict[str, object]:
        """Parameters the notebook fixes (not the user): its ``benchmark``."""
        return {"benchmark": self.benchmark}


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("train", "train", ClassificationConfig, "benchlib.workloads.classification:run",
              "Training benchmark",
              "Forward, loss, backward and an SGD-with-momentum step per iteration."),
    Benchmark("inference", "inference", ClassificationConfig,
              "benchlib.workloads.classification:run", "Inference benchmark",
              "Eval mode, no gradients: one forward pass per batch."),
    Benchmark("smooth_inference", "smooth_inference", ClassificationConfig,
              "benchlib.workloads.classification:run",
              "Smooth inference benchmark (randomized smoothing)",
              "For each input image, `noise_samples` Gaussian copies (`sigma`) are classified in "
              "chunks of `batch_size` and the class votes counted; one iteration is one input "
              "image."),
    Benchmark("unet3d_train", "unet3d_train", UNet3DTrainConfig, "benchlib.workloads.unet3d:run",
              "3D U-Net training benchmark",
              "Adam steps of a 3D U-Net on random patches of an EM volume (CREMI layout: "
              "`volumes/raw`, `volumes/labels/neuron_ids`) with flips and transposes, against "
              "affinity or boundary targets made from the labels (`dataset: real`), or on tensors "
              "made once on the device (`dataset: synthetic`). Reported as iterations/minute, "
              "days to 100k iterations and output voxels/s."),
    Benchmark("unet3d_predict", "unet3d_predict", UNet3DPredictConfig,
              "benchlib.workloads.unet3d:run", "3D U-Net blockwise prediction benchmark",
              "The whole volume is predicted block by block: each output block is read with a "
              "halo of context (zero outside the volume), passed through the network and "
              "written once into `output`. Reading runs in `num_workers` threads ahead of the "
              "compute and writing in a thread behind it. Reported as megavoxels/s and hours "
              "per teravoxel."),
    Benchmark("allreduce", "probe_allreduce", AllReduceConfig,
              "benchlib.workloads.collectives:run",
              "All-reduce probe: bus bandwidth over message sizes",
              "The collective that data-parallel training waits for, timed as nccl-tests times "
              "it.", kind="probe", summaries=("summary_scaling",)),
    Benchmark("node_probe", "probe_node", NodeProbeConfig, "benchlib.workloads.node_probe:run",
              "Node probe: what this node can do at most",
              "Matrix-multiply TFLOP/s per precision, memory and host-link bandwidth, JPEG "
              "decode against loader workers, data directory read throughput.", kind="probe",
              summaries=("summary_node",)),
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


def run_target(config: CommonConfig) -> str:
    """``module:function`` that runs ``config`` (the first entry with its config class)."""
    for entry in BENCHMARKS:
        if isinstance(config, entry.config) and type(config) is entry.config:
            return entry.run
    raise KeyError(f"no registered benchmark runs a {type(config).__name__}")


NOTEBOOK_CONFIGS = notebook_configs()
