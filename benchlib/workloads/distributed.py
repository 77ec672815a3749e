"""Inside one rank: who am I, which share of the data is mine, and the DDP wrapper.

Workloads call :func:`current` and get rank 0 of 1 in a plain process, so the single-process
path needs no launcher and no process group. Under torchrun, :func:`init` (called by the
launch worker) joins the process group: NCCL on CUDA devices, gloo on CPUs.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Rank:
    """This process's place in the job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def shard(self, items: Sequence) -> list:
        """Every ``world_size``-th item from this rank's index: disjoint, nothing dropped or
        repeated (shares differ by at most one item)."""
        return list(items[self.rank::self.world_size])

    def seed(self, seed: int) -> int:
        """A per-rank seed, so random data and patches differ between ranks."""
        return seed + 1_000_003 * self.rank


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
