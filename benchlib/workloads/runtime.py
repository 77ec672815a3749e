"""Device, precision and model preparation shared by the workloads."""

from __future__ import annotations

import contextlib
import resource
import sys
from collections.abc import Iterator

import torch

from benchlib.inputs.config import Precision, RunConfig
from benchlib.vocabulary import Precision as Precisions
from benchlib.workloads import distributed

AMP_DTYPES = {Precisions.AMP_FP16: torch.float16, Precisions.AMP_BF16: torch.bfloat16}


def resolve_device(choice: str) -> torch.device:
    """``auto`` picks CUDA when present; ``cuda`` without a GPU is a clear error. Under torchrun
    the CUDA device is this rank's local GPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for but torch sees no CUDA device; "
                           "use device 'auto' or 'cpu'")
    if choice not in ("cuda", "cpu"):
        raise ValueError(f"device {choice!r}: allowed auto, cuda, cpu")
    rank = distributed.current()
    return torch.device("cuda", rank.local_rank) if choice == "cuda" and rank.distributed \
        else torch.device(choice)


#: Whether the installed torch has the ``fp32_precision`` settings (2.9 on); mixing them with
#: the legacy ``allow_tf32`` flags warns, and errors under Inductor.
NEW_TF32_API = hasattr(torch.backends.cuda.matmul, "fp32_precision")
#: ``fp32_precision``'s values: TF32 (torch spells it as benchlib spells the precision) or not.
TORCH_TF32, TORCH_IEEE = str(Precisions.TF32), "ieee"


def set_tf32(matmul: bool, conv: bool | None = None) -> None:
    """TF32 for fp32 matrix products (and convolutions, ``conv`` defaulting to ``matmul``),
    through ``fp32_precision`` where the installed torch has it, else the legacy flags."""
    conv = matmul if conv is None else conv
    if NEW_TF32_API:
        torch.backends.cuda.matmul.fp32_precision = TORCH_TF32 if matmul else TORCH_IEEE
        torch.backends.cudnn.conv.fp32_precision = TORCH_TF32 if conv else TORCH_IEEE
        return
    torch.backends.cuda.matmul.allow_tf32 = matmul
    torch.backends.cudnn.allow_tf32 = conv
    torch.set_float32_matmul_precision("high" if matmul else "highest")


def tf32_matmul() -> bool:
    """Whether fp32 matrix products may use TF32 now."""
    if NEW_TF32_API:
        return torch.backends.cuda.matmul.fp32_precision == TORCH_TF32
    return bool(torch.backends.cuda.matmul.allow_tf32)


@contextlib.contextmanager
def tf32_for_matmul(enabled: bool) -> Iterator[None]:
    """TF32 for fp32 matrix products on or off inside the block, as it was after."""
    saved = tf32_matmul()
    conv = (torch.backends.cudnn.conv.fp32_precision == TORCH_TF32 if NEW_TF32_API
            else bool(torch.backends.cudnn.allow_tf32))
    set_tf32(enabled, conv)
    try:
        yield
    finally:
        set_tf32(saved, conv)


def configure_precision(precision: Precision, device: torch.device) -> None:
    """TF32 on for ``tf32`` only, so ``fp32`` means true fp32 matmuls and convolutions."""
    set_tf32(precision == Precisions.TF32)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True


def autocast(precision: Precision, device: torch.device) -> contextlib.AbstractContextManager:
    """torch.autocast for the AMP precisions, a no-op otherwise."""
    if precision in AMP_DTYPES:
        return torch.autocast(device.type, dtype=AMP_DTYPES[precision])
    return contextlib.nullcontext()


def prepare_model(
    model: torch.nn.Module, device: torch.device, channels_last: bool, compile_mode: str,
    ddp: bool = False,
) -> torch.nn.Module:
    """Move to the device, set the memory format, wrap in DDP (``ddp`` and several ranks) and
    optionally torch.compile (after DDP, as DDP's docs advise)."""
    model = model.to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    if ddp:
        model = distributed.wrap_ddp(model, device)
    if compile_mode != "none":
        model = torch.compile(model, mode=None if compile_mode == "default" else compile_mode)
    return model


def setup_run(config: RunConfig, model: torch.nn.Module, channels_last: bool = False,
              ddp: bool = False) -> tuple[torch.device, torch.nn.Module]:
    """The start every workload shares: resolve the device, seed torch, set the precision, and
    prepare ``model`` (built by the caller after the seed) on the device."""
    device = resolve_device(config.device)
    set_threads()
    configure_precision(config.precision, device)
    return device, prepare_model(model, device, channels_last, config.compile, ddp=ddp)


def set_threads() -> int:
    """Set torch's intra-op threads explicitly: ``OMP_NUM_THREADS`` where the launcher set it
    (the node's CPUs shared by its ranks), else every CPU this process may use. The record's
    ``threads_per_process`` says what a run used."""
    import os

    try:
        threads = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        try:
            threads = len(os.sched_getaffinity(0))
        except AttributeError:
            threads = os.cpu_count() or 1
    torch.set_num_threads(max(1, threads))
    return torch.get_num_threads()


def reset_peak_memory(device: torch.device) -> None:
    """Start a fresh peak-memory window on CUDA (the host's peak RSS cannot be reset)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_bytes(device: torch.device) -> int:
    """Peak device memory allocated by torch; on CPU the process's peak resident set."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)
