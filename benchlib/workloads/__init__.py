"""Benchmark workloads: each runs a timed loop and returns a :class:`RunResult`."""

from benchlib.workloads.result import RunResult

__all__ = ["RunResult"]
