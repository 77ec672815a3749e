"""Benchmark kinds: one object per kind carrying what differs between kinds (its run function,
the record columns it adds, FLOPs per sample, its notebook's cells, headline and plot title).

:mod:`benchlib.registry` names each benchmark's kind as a ``"module:attribute"`` string and
loads it when asked (:func:`benchlib.registry.kind_of`), so lower layers ask for a kind without
importing this layer. A kind's module imports torch and the pages only inside its methods:
loading a kind to read :attr:`Kind.timed_loop` while records load stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from benchlib.inputs.config import CommonConfig
    from benchlib.registry import Benchmark

#: The cells of a benchmark notebook: its first Markdown cell, the heading over the
#: configuration, and the cells after the configuration cell.
Cells = tuple[str, str, tuple]


class Kind:
    """What one kind of benchmark does differently; the defaults are a timed loop's."""

    #: ``module:function`` the launcher runs (a string: torchrun's workers import it).
    run: str = ""
    #: A timed loop of iterations: ``short`` applies, the interval comes from its iterations.
    timed_loop: bool = True
    #: Comments beside parameters in its notebooks' parameters cells, over the shared ones
    #: (:mod:`benchlib.publish.benchmark_notebook.parameters`).
    comments: ClassVar[dict[str, str]] = {}

    def record_fields(self, config: Any, result: Any, **context: object) -> dict[str, object]:
        """The record's columns besides where the run happened (``run_identity``), FLOPs,
        ``env_*`` and flags: the timed loop's columns and :meth:`columns`."""
        from benchlib.records.build import timed_loop_columns

        return {**timed_loop_columns(config, result), **self.columns(config, result)}

    def columns(self, config: Any, result: Any) -> dict[str, object]:
        """The columns only this kind has (``benchmark``, ``model`` and its own)."""
        return {"benchmark": config.benchmark}

    def interval(self, result: Any) -> dict[str, float | None]:
        """``throughput_low`` / ``throughput_high`` from the run's own iterations."""
        from benchlib.records.run_interval import throughput_interval

        return throughput_interval(result)

    def flops_per_sample(self, config: Any) -> float | None:
        """Model FLOPs per counted sample (None: this kind has no model FLOPs)."""
        return None

    def headline(self, config: Any, result: Any) -> str:
        """One line on what the run achieved."""
        return (f"{result.throughput:.2f} {result.unit} over {result.iterations} timed "
                f"iterations ({result.wall_time_s:.2f} s; {result.warmup} warm-up excluded)")

    def title(self, config: Any) -> str:
        """What ran, for the title of its plots."""
        return f"{config.benchmark}, batch {config.batch_size}, {config.precision}"

    def parameter_names(self, entry: Benchmark) -> list[str]:
        """The parameters the entry's notebook takes: its config class's fields."""
        return [n for n in entry.config.model_fields if n != "benchmark"]

    def defaults(self, entry: Benchmark, fixed: dict[str, object]) -> CommonConfig:
        """The config whose values the parameters cell shows."""
        return entry.config(**fixed)

    def cells(self, entry: Benchmark) -> Cells:
        """The notebook's introduction, configuration heading and cells after it."""
        raise NotImplementedError(f"{type(self).__name__} gives no notebook cells")
