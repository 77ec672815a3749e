"""Inside one rank: who am I, which share of the data is mine, and the DDP wrapper.

Workloads call :func:`current` and get rank 0 of 1 in a plain process, so the single-process
path needs no launcher and no process group. Under torchrun, :func:`init` (called by the
launch worker) joins the process group: NCCL on CUDA devices, gloo on CPUs.
"""

from __future__ import annotations

import datetime
import os

import torch
from torch import nn

from benchlib.data.shard import Rank

_current = Rank()


def current() -> Rank:
    """This process's rank (rank 0 of 1 unless :func:`init` joined a process group)."""
    return _current


def _from_environment() -> Rank:
    env = os.environ
    local_world = int(env.get("LOCAL_WORLD_SIZE", 1))
    return Rank(rank=int(env["RANK"]), world_size=int(env["WORLD_SIZE"]),
                local_rank=int(env.get("LOCAL_RANK", 0)), local_world_size=local_world,
                node_rank=int(env.get("GROUP_RANK", int(env["RANK"]) // max(local_world, 1))))


def init(device: str, timeout_s: float) -> Rank:
    """Join the torchrun process group (NCCL for CUDA, gloo otherwise); pins the local GPU.

    ``timeout_s`` bounds every collective, so a rank waiting for a dead peer gives up.
    """
    global _current
    rank = _from_environment()
    cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(rank.local_rank)
    torch.distributed.init_process_group(
        backend="nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=timeout_s),
        device_id=torch.device("cuda", rank.local_rank) if cuda else None)
    _current = rank
    return rank


def shutdown() -> None:
    """Leave the process group (if any)."""
    global _current
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    _current = Rank()


def backend() -> str:
    """``nccl``, ``gloo`` or empty when not distributed."""
    return torch.distributed.get_backend() if torch.distributed.is_initialized() else ""


def wrap_ddp(model: nn.Module, device: torch.device) -> nn.Module:
    """DistributedDataParallel around ``model`` when distributed; the model itself otherwise."""
    if not current().distributed:
        return model
    ids = [device.index if device.index is not None else current().local_rank] \
        if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def barrier() -> None:
    """Wait for every rank (no-op in a single process)."""
    if current().distributed:
        torch.distributed.barrier()


def broadcast_object(value: object) -> object:
    """Rank 0's ``value`` on every rank (the value itself in a single process)."""
    if not current().distributed:
        return value
    box = [value]
    torch.distributed.broadcast_object_list(box, src=0)
    return box[0]
