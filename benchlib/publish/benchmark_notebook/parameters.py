"""What the benchmark notebooks' parameters cells say beside each parameter (the values and
the names come from the config classes, :mod:`benchlib.inputs.config`); a kind's own comments
are its :attr:`benchlib.kinds.base.Kind.comments`."""

from __future__ import annotations

from benchlib.vocabulary import Precision

#: Comments on the parameters of every benchmark notebook.
COMMENTS = {
    "campaign": "run by hand: its record is saved under outputs/<campaign>/ (a sweep sets its own)",
    "iterations": 'timed iterations after warm-up, "epoch" (one pass over the data) or "auto"',
    "min_time_s": 'iterations "auto": time at least this long, then stop once the mean is known',
    "max_time_s": 'iterations "auto": stop after this long in any case',
    "probe_time_s": "seconds each figure may take (iterations and sizes shrink to fit)",
    "dataset": "synthetic | real",
    "synthetic_kind": "device: tensors made once on the device; loader: made by CPU workers",
    "data_dir": "ImageNet-layout JPEG folder (dataset: real)",
    "data_source": "disk: read as it goes | memory: read once before timing (decode only)",
    "decode": "loader: JPEGs decoded by the CPU workers | device: on the run's device (nvJPEG)",
    "image_size": "None: the model's default (224, inception_v3 299)",
    "device": "auto | cuda | cpu",
    "precision": " | ".join(Precision),
    "compile": "none | default | reduce-overhead | max-autotune",
    "breakdown": "per-phase timers (False: whole iterations only)",
    "cluster": "empty: SLURM cluster name, $BENCHLIB_CLUSTER or host name",
    "volume": "CREMI-layout HDF5 (.h5) or zarr (.zarr): benchlib data volume PATH --shape Z Y X",
    "pooling": "one [z, y, x] for every level, or one per level",
    "padding": "valid | same (3x3x3 convolutions)",
    "norm": "none | batch | group",
    "target": "affinities (3 channels) | boundaries (1)",
    "patch_shape": "network input (z, y, x); the loss covers the valid output",
    "block_shape": "output block per pass, a multiple of the network's downsampling",
    "halo": "None: what valid convolutions consume (same: the receptive field)",
    "output": "HDF5 / zarr for the predictions; empty: a temporary file beside the volume",
    "output_dtype": "uint8 | float16 | float32",
    "num_devices": "devices (one process each) over all nodes; > 1 runs through torchrun",
    "num_nodes": "nodes; > 1: a c10d rendezvous (srun in a SLURM allocation)",
    "node_launcher": "auto (srun in SLURM) | srun | localhost (every node on this machine)",
    "hang_timeout_s": "a rank that finishes no iteration for this long stops the launch",
    "scaling": "weak: batch_size per device | strong: batch_size is the global batch",
    "min_bytes": "smallest message (bytes); sizes double up to max_bytes",
    "max_bytes": "largest message (bytes)",
    "dtype": "float32 | bfloat16 | float16",
    "telemetry_interval_s": "seconds between NVML samples over the timed loop (0: off)",
}
