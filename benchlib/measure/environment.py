"""Environment capture: where and on what a run happened (the record's ``env_*`` columns)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from benchlib import PROJECT_ROOT, SCHEMA_VERSION
from benchlib.measure.redact import SECRET_NAME, redact, redact_values
from benchlib.measure.telemetry import interconnect
from benchlib.measure.timing import iso_utc, new_run_id

if TYPE_CHECKING:
    import torch

    from benchlib.inputs.config import CommonConfig

#: Short GPU names, matched in this order against the device name.
GPU_NAMES = ("GH200", "H200", "H100", "H800", "B200", "B100", "A100", "A800", "A40", "A30", "A10",
             "L40S", "L40", "L4", "V100", "P100", "P40", "T4", "K80", "MI300X", "MI250X",
             "RTX 6000", "2080 Ti", "1080 Ti", "3090", "4090", "TITAN")

#: Environment variables that shape a run, copied into records as ``env_var_<NAME>``. Only
#: these names and prefixes are read; a name that looks like a secret is never copied.
ENV_ALLOW = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG",
             "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS", "TORCHINDUCTOR_MAX_AUTOTUNE")
ENV_ALLOW_PREFIXES = ("NCCL_", "TORCH_NCCL_", "UCX_", "FI_")

#: Where a container runtime leaves its name.
CONTAINER_VARIABLES = ("BENCHLIB_CONTAINER_IMAGE", "APPTAINER_CONTAINER", "SINGULARITY_CONTAINER",
                       "ENROOT_ROOTFS", "PYXIS_CONTAINER_IMAGE")


#: SLURM variables copied into records (an allow-list: nothing else from the environment).
SLURM_VARIABLES = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NODELIST",
                   "SLURM_JOB_PARTITION", "SLURM_CLUSTER_NAME")


def job_ids_from_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed SLURM variables as ``env_slurm_*`` record columns ('' outside SLURM)."""
    environ = os.environ if environ is None else environ
    return {"env_" + name.lower(): environ.get(name, "") for name in SLURM_VARIABLES}


def allowed_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed variables that are set, as ``env_var_<NAME>`` columns: none whose name
    looks secret, credentials inside values masked (:mod:`benchlib.measure.redact`)."""
    environ = dict(os.environ if environ is None else environ)
    chosen = {name: value for name, value in environ.items()
              if (name in ENV_ALLOW or name.startswith(ENV_ALLOW_PREFIXES))
              and not SECRET_NAME.search(name)}
    return {f"env_var_{name.lower()}": redact(chosen[name]) for name in sorted(chosen)}


def container_image(environ: dict[str, str] | None = None, root: Path = Path("/")) -> str:
    """The container image (Apptainer / Singularity / enroot / BENCHLIB_CONTAINER_IMAGE), ``docker``
    or ``podman`` when only their marker file exists, '' outside a container."""
    environ = os.environ if environ is None else environ
    for name in CONTAINER_VARIABLES:
        if environ.get(name):
            return redact(environ[name])
    if (root / ".dockerenv").exists():
        return "docker"
    if (root / "run" / ".containerenv").exists():
        return "podman"
    return ""


def filesystem_type(path: str | Path, mounts: str | None = None) -> str:
    """The file system type (``lustre``, ``nfs4``, ``ext4``, ...) of the mount holding ``path``,
    from /proc/mounts (or ``mounts``, its text); '' when unknown."""
    if not path:
        return ""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return ""
    target = os.path.realpath(path)
    best, kind = "", ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def numa_nodes(root: Path = Path("/sys/devices/system/node")) -> int:
    """How many NUMA nodes the kernel lists (0 when it does not say)."""
    return len([p for p in root.glob("node[0-9]*") if p.is_dir()])


def gpu_names() -> str:
    """The names of every visible GPU, ``; ``-separated ('' without CUDA)."""
    import torch  # here, not at the top: job ids are read in processes that never use torch

    if not torch.cuda.is_available():
        return ""
    return "; ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))


def short_gpu_name(device_name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``; an unknown name loses its vendor prefix."""
    for name in GPU_NAMES:
        if name.replace(" ", "").lower() in device_name.replace(" ", "").lower():
            return name.replace(" ", "")
    return re.sub(r"^(NVIDIA|AMD|Tesla)\s+", "", device_name).strip() or "unknown"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or platform's answer elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _distribution_version(name: str) -> str:
    """The installed version of distribution ``name``; empty when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _git_commit() -> str:
    root = PROJECT_ROOT
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _driver_version() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return ""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
    return match.group(1) if match else ""


def device_identity(device: torch.device) -> dict[str, str]:
    """``gpu`` (short name, ``cpu`` on the host) and ``device_name`` (full name)."""
    import torch

    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return {"gpu": short_gpu_name(name), "device_name": name}
    return {"gpu": "cpu", "device_name": cpu_model()}


def default_cluster() -> str:
    """SLURM's cluster name, ``BENCHLIB_CLUSTER``, or else the host name."""
    return (os.environ.get("BENCHLIB_CLUSTER") or os.environ.get("SLURM_CLUSTER_NAME")
            or socket.gethostname())


def run_identity(config: CommonConfig, result: object) -> dict[str, object]:
    """The columns that say which run this was and where and when it happened: schema, run id,
    start and end, campaign, cluster, host, device, devices and nodes (as they ran; ``result``
    has ``device``, ``num_devices``, ``num_nodes``, and may have ``run_id``, ``started_at`` and
    ``ended_at``, epoch seconds: a result without a run id gets a new one)."""

    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": getattr(result, "run_id", "") or new_run_id(),
        **run_times(getattr(result, "started_at", None), getattr(result, "ended_at", None)),
        "campaign": config.campaign,
        "cluster": config.cluster or default_cluster(),
        "host": socket.gethostname(),
        **device_identity(result.device),  # type: ignore[attr-defined]
        "num_devices": result.num_devices,  # type: ignore[attr-defined]
        "num_nodes": result.num_nodes,  # type: ignore[attr-defined]
    }


def run_times(started_at: float | None, ended_at: float | None) -> dict[str, str | None]:
    """``started_at`` / ``ended_at`` (epoch seconds, None: unknown) as the record's ISO 8601 UTC
    columns."""
    return {"started_at": None if started_at is None else iso_utc(started_at),
            "ended_at": None if ended_at is None else iso_utc(ended_at)}


def capture(device: torch.device, data_path: str = "") -> dict[str, object]:
    """Versions, hardware, host, container, job ids and allow-listed variables as flat ``env_*``
    columns; ``data_path`` (the data directory or volume) adds its file system type."""
    import torch

    import benchlib

    cuda = torch.cuda.is_available()
    try:
        cpus_allowed = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus_allowed = os.cpu_count() or 0
    env: dict[str, object] = {
        "env_benchlib": benchlib.__version__,
        "env_git_commit": _git_commit(),
        "env_python": platform.python_version(),
        "env_torch": torch.__version__,
        # the installed distribution's version: importing torchvision for it costs seconds
        # (it imports torch._dynamo) in processes that never use it
        "env_torchvision": _distribution_version("torchvision"),
        "env_cuda": torch.version.cuda or "",
        "env_cudnn": str(torch.backends.cudnn.version() or "") if cuda else "",
        "env_nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else "",
        "env_driver": _driver_version(),
        "env_gpu_count": torch.cuda.device_count() if cuda else 0,
        "env_gpu_memory_bytes": (torch.cuda.get_device_properties(device).total_memory
                                 if device.type == "cuda" else None),
        "env_cpu": cpu_model(),
        "env_cpu_count": os.cpu_count() or 0,
        "env_cpus_allowed": cpus_allowed,
        "env_memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "env_gpu_names": gpu_names(),
        "env_numa_nodes": numa_nodes(),
        "env_os": platform.platform(),
        "env_host": socket.gethostname(),
        "env_container": container_image(),
        "env_data_fs": filesystem_type(data_path),
        "env_torch_threads": torch.get_num_threads(),
    }
    env.update(interconnect(device))
    env.update(job_ids_from_env())
    env.update(allowed_environment())
    return redact_values(env)
