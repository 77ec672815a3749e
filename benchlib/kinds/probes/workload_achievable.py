"""What the node actually reaches, beside its one-shape figures: the maximum achievable matmul
throughput (MAMF) over a sweep of shapes, and memory bandwidth by a STREAM triad.

The MAMF method (Stas Bekman's ``mamf-finder.py`` in ml-engineering): a matrix multiply's
throughput depends on its shape, so the achievable peak is the best over many shapes, each
warmed up and timed over several calls, within a time budget. As the finder reports it (its
``mean`` line, the figure of its published table), a shape's throughput is its flops over the
mean time of its calls, and MAMF is the best shape's mean; the fastest single call of any shape
is kept beside it (the finder's ``max``, an optimistic figure). Here the shapes are the
products ``m x k @ k x n`` with each dimension taken from a few sizes around the largest square
product that fits the budget (multiples of 64, largest products first), so a CPU finishes in
seconds and a GPU sweeps sizes where its kernels are at their best.

The triad is STREAM's ``a = b + s * c`` over three arrays, counted as two arrays read and one
written; its best call is the bandwidth (STREAM reports the best of its repetitions too).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from benchlib.measure.timing import device_seconds

#: Shapes' dimensions are multiples of this (tensor-core and vector-unit friendly).
ALIGN = 64
#: Each dimension is the base size times one of these (then aligned).
SCALES = (1.25, 1.0, 0.75, 0.5)


@dataclass(frozen=True)
class Achieved:
    """The best throughput found and where: ``value`` (TFLOP/s or GB/s; for matmul the best
    shape's mean over its calls), ``shape`` (``m``, ``n``, ``k``; empty for the triad), how many
    shapes (or calls) were timed, ``calls``, the fewest timed calls a shape (or the triad) got:
    below the repeats asked for where the time budget ran out, and for matmul ``fastest_call``,
    the fastest single call of any shape."""

    value: float
    shape: tuple[int, ...]
    tried: int
    calls: int = 0
    fastest_call: float | None = None

    def calls_text(self, repeats: int) -> str:
        """``each the mean of 5 calls``, or how many the budget left where it cut them short."""
        if self.calls >= repeats or not self.calls:
            return f"each the mean of {repeats} calls"
        return (f"each the mean of up to {repeats} calls (as few as {self.calls}: "
                "probe_time_s ran out)")

    @property
    def shape_text(self) -> str:
        """``m x k @ k x n`` for a matmul shape, '' otherwise."""
        if len(self.shape) != 3:
            return ""
        m, n, k = self.shape
        return f"{m}x{k} @ {k}x{n}"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def call_seconds(fn: Callable[[], object], device: torch.device, repeats: int, warmup: int,
                 deadline: float) -> list[float]:
    """The seconds of up to ``repeats`` calls of ``fn``, each timed on its own on the device's
    clock (:func:`benchlib.measure.timing.device_seconds`), after up to ``warmup`` untimed
    calls; at least one timed call, stopping early once ``time.perf_counter()`` passes
    ``deadline``."""
    for _ in range(warmup):
        fn()
        _sync(device)
        if time.perf_counter() > deadline:
            break
    seconds = []
    for _ in range(max(1, repeats)):
        seconds.append(device_seconds(fn, device))
        if time.perf_counter() > deadline:
            break
    return seconds


def best_seconds(fn: Callable[[], object], device: torch.device, repeats: int, warmup: int,
                 deadline: float) -> tuple[float, int]:
    """The shortest of the calls :func:`call_seconds` times, and how many were timed."""
    seconds = call_seconds(fn, device, repeats, warmup, deadline)
    return min(seconds), len(seconds)


def shapes(base: int, largest: int) -> list[tuple[int, int, int]]:
    """The ``(m, n, k)`` shapes swept around ``base``: every combination of the sizes in
    :data:`SCALES` x ``base`` (aligned to :data:`ALIGN`, at least ``ALIGN``, at most
    ``largest``), the largest products first, the square ``base`` product first among equals."""
    sizes = sorted({min(largest, max(ALIGN, round(base * s / ALIGN) * ALIGN)) for s in SCALES},
                   reverse=True)
    found = set(itertools.product(sizes, repeat=3))
    return sorted(found, key=lambda s: (-(s[0] * s[1] * s[2]), s != (base, base, base), s))


def mean_and_fastest_tflops(flops: float, seconds: list[float]) -> tuple[float, float]:
    """TFLOP/s of ``flops`` per call over calls that took ``seconds``: over their mean time
    (the finder's ``mean``) and over the shortest (its ``max``)."""
    return (flops / (sum(seconds) / len(seconds)) / 1e12, flops / min(seconds) / 1e12)


def achievable_matmul(device: torch.device, dtype: torch.dtype, base: int, largest: int,
                      repeats: int, warmup: int, budget_s: float) -> Achieved:
    """MAMF of ``m x k @ k x n`` products in ``dtype`` over :func:`shapes` around ``base``:
    each shape's TFLOP/s over the mean time of ``repeats`` calls after ``warmup``, the best
    shape's, until ``budget_s`` seconds are spent (at least one shape); the fastest single
    call of any shape beside it."""
    deadline = time.perf_counter() + budget_s
    best, fastest, where, tried, fewest = 0.0, 0.0, (base, base, base), 0, repeats
    for m, n, k in shapes(base, largest):
        if tried and time.perf_counter() > deadline:
            break
        a = torch.randn(m, k, device=device).to(dtype)
        b = torch.randn(k, n, device=device).to(dtype)
        out = torch.empty(m, n, device=device, dtype=dtype)
        seconds = call_seconds(lambda a=a, b=b, out=out: torch.mm(a, b, out=out), device,
                               repeats, warmup, deadline)
        tried, fewest = tried + 1, min(fewest, len(seconds))
        mean, once = mean_and_fastest_tflops(2 * m * n * k, seconds)
        fastest = max(fastest, once)
        if mean > best:
            best, where = mean, (m, n, k)
        del a, b, out
    return Achieved(best, where, tried, fewest, fastest)


def triad_gbps(device: torch.device, nbytes: int, repeats: int, warmup: int,
               budget_s: float) -> Achieved:
    """GB/s (1e9 bytes) of STREAM's triad ``a = b + 3 c`` over three float32 arrays that
    together hold ``nbytes``: two arrays read and one written per call; the best call of up to
    ``repeats`` after ``warmup``, within ``budget_s`` seconds."""
    count = max(1, nbytes // 12)
    b = torch.empty(count, dtype=torch.float32, device=device).fill_(1.0)
    c = torch.empty_like(b).fill_(2.0)
    a = torch.empty_like(b)
    seconds, calls = best_seconds(lambda: torch.add(b, c, alpha=3.0, out=a), device, repeats,
                                  warmup, time.perf_counter() + budget_s)
    return Achieved(3 * count * 4 / seconds / 1e9, (), calls, calls)
