"""A site's own benchmark kind, added from outside benchlib as a user would: an axpy loop
(``y += a * x``) reported in GB/s. Its package's ``benchlib.benchmarks`` entry point names this
module; importing it registers the benchmark (:func:`benchlib.registry.register`, its notebook
in this package's ``notebooks/``, written by ``tools/make_notebooks.py``) and its kind
(:func:`benchlib.kinds.register_kind`: what it records, the comments beside its parameters and
its headline) and its notebook's layout
(:func:`~benchlib.publish.benchmark_notebook.layouts.register_layout`): one folder.
``tests/test_kinds.py`` installs it by putting this folder (with its ``.dist-info``) on
``PYTHONPATH``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

import torch
from pydantic import PositiveInt

from benchlib import registry
from benchlib.inputs.config import CommonConfig
from benchlib.kinds import Kind, register_kind
from benchlib.publish.benchmark_notebook import run as cells
from benchlib.publish.benchmark_notebook.layouts import Layout, register_layout
from benchlib.workloads.runtime import resolve_device


class AxpyConfig(CommonConfig):
    """An axpy over ``elements`` float32 values, ``repeats`` times."""

    benchmark: Literal["example_axpy"] = "example_axpy"
    elements: PositiveInt = 1_000_000
    repeats: PositiveInt = 20


@dataclass
class AxpyResult:
    device: torch.device
    throughput: float
    repeats: int
    unit: str = "GB/s"
    env: dict[str, object] = field(default_factory=dict)
    num_devices: int = 1
    num_nodes: int = 1


def run(config: AxpyConfig) -> AxpyResult:
    """Time ``repeats`` axpys; bytes moved are 3 float32 per element (read x, y; write y)."""
    device = resolve_device(config.device)
    x = torch.rand(config.elements, device=device)
    y = torch.zeros(config.elements, device=device)
    start = time.perf_counter()
    for _ in range(config.repeats):
        y.add_(x, alpha=0.5)
    seconds = time.perf_counter() - start
    return AxpyResult(device, 12 * config.elements * config.repeats / seconds / 1e9, config.repeats)


@register_kind("example_axpy")
class Axpy(Kind):
    """Memory bandwidth of an axpy: one figure, no timed loop of iterations."""

    run = "benchlib_example_kind:run"
    timed_loop = False
    comments: ClassVar[dict[str, str]] = {"elements": "float32 values in x and in y",
                                          "repeats": "axpys timed, one after the other"}

    def record_fields(self, config: AxpyConfig, result: AxpyResult,
                      **context: object) -> dict[str, object]:
        return {"benchmark": config.benchmark, "model": "axpy", "dataset": "synthetic",
                "precision": "fp32", "throughput": result.throughput, "unit": "GB/s",
                "iterations": result.repeats, "device": result.device.type}

    def interval(self, result: AxpyResult) -> dict[str, float | None]:
        return {"throughput_low": None, "throughput_high": None}

    def headline(self, config: AxpyConfig, result: AxpyResult) -> str:
        return f"{result.throughput:.3g} GB/s over {result.repeats} axpys"


registry.register(registry.Benchmark(
    "example_axpy", "example_axpy", AxpyConfig, "example_axpy", "Axpy example",
    "y += a * x over float32 vectors, in GB/s.", activity="axpy",
    folder=Path(__file__).resolve().parent / "notebooks"))


register_layout("example_axpy", Layout(cells.ONE_RUN, "params/axpy.yaml", "elements 1000",
                                       "## Axpy settings"))
