"""Workloads for the launcher tests, started by torchrun in each rank (``tests.dist_targets:fn``)."""

from __future__ import annotations

import os
import signal
import time

import torch

from benchlib.workloads import distributed
from benchlib.workloads.loop import progress


def _step_then(action) -> None:
    """One all-reduce on every rank (an iteration), then ``action`` on rank 1, then another."""
    torch.distributed.all_reduce(torch.ones(4))
    progress.tick()
    if distributed.current().rank == 1:
        action()
    torch.distributed.all_reduce(torch.ones(4))


def crash(config) -> None:
    def fail() -> None:
        raise ValueError("injected failure on rank 1")
    _step_then(fail)


def killed(config) -> None:
    _step_then(lambda: os.kill(os.getpid(), signal.SIGKILL))


def hang(config) -> None:
    _step_then(lambda: time.sleep(3600))


def tiny_net() -> torch.nn.Module:
    """A small convolutional classifier without batch norm or dropout (deterministic)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32, 10))


def global_batch(size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return (torch.randn(size, 3, 16, 16, generator=generator),
            torch.randint(0, 10, (size,), generator=generator))


def one_train_step(config):
    """One benchlib TrainStep (DDP-wrapped on several ranks) on this rank's part of the global
    batch; returns the parameters after the step."""
    from types import SimpleNamespace

    from benchlib.kinds.classification.workload import TrainStep
    from benchlib.workloads.loop import NoTimer
    from benchlib.workloads.runtime import prepare_model, resolve_device

    device = resolve_device("cpu")
    model = prepare_model(tiny_net(), device, False, "none", ddp=True)
    images, labels = global_batch()
    rank = distributed.current()
    part = slice(rank.rank * len(images) // rank.world_size,
                 (rank.rank + 1) * len(images) // rank.world_size)
    step = TrainStep(model, config, device)
    step(iter([(images[part], labels[part])]), NoTimer())
    module = model.module if hasattr(model, "module") else model
    return SimpleNamespace(device=device, parameters=[p.detach().clone() for p in module.parameters()],
                           ddp=type(model).__name__)
