"""Published figures from earlier campaigns, shipped as reference records (see README.md here).

They are facts, not results of this project: each record keeps its ``provenance`` and the
original labels, and is mapped onto the record schema so that summaries can put new runs
beside them.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

import pandas as pd

from benchlib import SCHEMA_VERSION
from benchlib.measure.timing import PHASES
from benchlib.vocabulary import Precision, RecordStatus

BREAKDOWN_CSV = "cluster_breakdown_resnet50_fp32.csv"
UNET3D_CSV = "unet3d_cremi_pytorch040.csv"
DATASHEETS_CSV = "gpu_datasheets.csv"
DATASETS = {"ImageNet": "real", "Dummy": "synthetic"}
BENCHMARKS = {"Train": "train", "Inference": "inference", "Smooth Inference": "smooth_inference"}

#: Expected relative speeds quoted by the breakdown campaign from a public benchmark (fp32):
#: (system a, system b, speed of a / speed of b).
EXPECTED_SPEEDS = (
    ("8 x V100", "8 x A40", 0.927),
    ("1 x V100", "1 x A40", 0.943),
    ("JADE2 V100", "V100", 0.67),
    ("8 x JADE2 V100", "8 x A40", 0.621),
)


def _csv(name: str) -> pd.DataFrame:
    with resources.files(__package__).joinpath(name).open() as handle:
        return pd.read_csv(handle)


def breakdown_records() -> pd.DataFrame:
    """ResNet-50 fp32 per-iteration breakdown on the TN and JADE2 clusters, as records."""
    raw = _csv(BREAKDOWN_CSV)
    frame = raw.rename(columns={"dataset": "dataset_label"}).assign(
        dataset=raw["dataset"].map(DATASETS), benchmark=raw["benchmark"].map(BENCHMARKS),
        model="resnet50", precision=Precision.FP32.value, num_nodes=1,
        status=RecordStatus.OK.value, campaign="reference",
        provenance=f"reference: {BREAKDOWN_CSV}", schema_version=SCHEMA_VERSION,
    )
    phases = [f"time_{p}_s" for p in PHASES if f"time_{p}_s" in frame]
    frame["time_iteration_s"] = frame[phases].sum(axis=1, min_count=1)
    return frame


def unet3d_records() -> pd.DataFrame:
    """3D U-Net CREMI training (1001 iterations) and ~1.9 gigavoxel prediction, as records."""
    raw = _csv(UNET3D_CSV)
    common = {"model": "unet3d", "status": RecordStatus.OK.value, "campaign": "reference",
              "schema_version": SCHEMA_VERSION, "provenance": f"reference: {UNET3D_CSV}", "num_nodes": 1}
    train = raw.assign(benchmark="unet3d_train", cluster=raw["system"],
                       iterations=raw["train_iterations"], wall_time_s=raw["train_time_s"],
                       time_iteration_s=raw["train_time_s"] / raw["train_iterations"],
                       unit="iterations/s", **common)
    predicted = raw.dropna(subset=["predict_time_s"])
    voxels = predicted["predict_gigavoxels"] * 1e9
    predict = predicted.assign(benchmark="unet3d_predict", cluster=predicted["system"],
                               samples=voxels, wall_time_s=predicted["predict_time_s"],
                               throughput=voxels / predicted["predict_time_s"], unit="voxels/s",
                               **common)
    keep = ["campaign", "cluster", "gpu", "num_devices", "benchmark", "model", "iterations",
            "samples", "wall_time_s", "time_iteration_s", "throughput", "unit", "cuda", "pytorch",
            "status", "provenance", "schema_version", "num_nodes"]
    return pd.concat([train, predict], ignore_index=True).reindex(columns=keep)


def datasheets() -> pd.DataFrame:
    """Datasheet peaks per GPU variant (dense TFLOP/s per precision, memory and host link GB/s)."""
    return _csv(DATASHEETS_CSV)


@functools.cache
def _datasheet_rows() -> tuple[dict[str, object], ...]:
    return tuple(datasheets().to_dict("records"))


def datasheet_for(device_name: str) -> dict[str, object] | None:
    """The datasheet row whose ``pattern`` matches torch's device name (``NVIDIA H100 80GB
    HBM3`` -> H100 SXM5), or None for a GPU not listed (and for CPUs). The file is read once."""
    if not isinstance(device_name, str) or not device_name:
        return None
    for row in _datasheet_rows():
        if re.search(str(row["pattern"]), device_name, flags=re.IGNORECASE):
            return dict(row)
    return None


def load() -> pd.DataFrame:
    """Every reference record."""
    return pd.concat([breakdown_records(), unet3d_records()], ignore_index=True)
