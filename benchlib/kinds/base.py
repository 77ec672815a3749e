"""What a kind of benchmark is, and the table of registered kinds.

A :class:`Kind` carries what differs between kinds: its run function, the record columns it
adds, FLOPs per sample, its within-run interval, the facts the analysis asks of it (a probe or
not, its lab units, the unit of its energy efficiency) and how a run of it is told (its
headline, the title of its plots, the comments beside its notebook's parameters). Its notebook's
cells are its layout, :mod:`benchlib.publish.benchmark_notebook.layouts`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

#: Registered kinds by name (the ``kind`` of :class:`benchlib.registry.Benchmark` entries).
KINDS: dict[str, Kind] = {}

K = TypeVar("K", bound="type[Kind]")


class Kind:
    """What one kind of benchmark does differently; the defaults are a timed loop's."""

    #: ``module:function`` the launcher runs (a string: torchrun's workers import it).
    run: str = ""
    #: A timed loop of iterations: ``short`` applies, the interval comes from its iterations.
    timed_loop: bool = True
    #: A probe of the node (its figures are ceilings, not a workload's throughput).
    probe: bool = False
    #: Lab units (columns of :func:`benchlib.analysis.lab_units.derived_units`) it reports.
    lab_units: ClassVar[tuple[str, ...]] = ()
    #: The lab unit its summary plot shows, and the plot's words for it.
    lab_panel: ClassVar[tuple[str, str] | None] = None
    #: What it counts as a sample, plural ("images": throughput in images/s; '' for a probe).
    samples: ClassVar[str] = ""
    #: The config field naming the data a run reads (a folder or file; '': none).
    data_field: ClassVar[str] = ""
    #: Result extras that add up over the ranks of a launch (the rest are rank 0's).
    summed_extras: ClassVar[tuple[str, ...]] = ()
    #: Comments beside its notebook's parameters (over those every benchmark notebook shows).
    comments: ClassVar[dict[str, str]] = {}

    def data_path(self, config: Any) -> str:
        """The data ``config`` reads (its :attr:`data_field`), '' for synthetic data."""
        if not self.data_field or getattr(config, "dataset", "real") == "synthetic":
            return ""
        return str(getattr(config, self.data_field, "") or "")

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
        """One line on what the run achieved: a timed loop's throughput, iterations and time;
        for another run (a site's kind that is not a loop), its throughput and unit if it has
        them."""
        if not all(hasattr(result, n) for n in ("unit", "iterations", "wall_time_s", "warmup")):
            throughput = getattr(result, "throughput", None)
            return "done" if throughput is None else \
                f"{throughput:.4g} {getattr(result, 'unit', '')}".strip()
        return (f"{result.throughput:.2f} {result.unit} over {result.iterations} timed "
                f"iterations ({result.wall_time_s:.2f} s; {result.warmup} warm-up excluded)")

    def title(self, config: Any) -> str:
        """What ran, for the title of its plots."""
        return f"{config.benchmark}, batch {config.batch_size}, {config.precision}"

    def shown_config(self, entry: Any, fixed: dict[str, object]) -> Any:
        """The config whose values its notebook's parameters cell shows (``entry``: its
        registry entry; ``fixed``: what the configuration cell fixes)."""
        return entry.config(**fixed)

    def per_joule_unit(self, unit: str) -> str | None:
        """The unit of ``samples_per_joule`` for a record whose throughput is in ``unit``: what
        a sample is, per joule (images/s -> images/J, tokens/s -> tokens/J, voxels/s ->
        voxels/J); None where the throughput is not samples per second (a probe's)."""
        if self.probe or not unit.endswith("/s"):
            return None
        return f"{unit.removesuffix('/s')}/J"


def register_kind(name: str) -> Callable[[K], K]:
    """Class decorator: register one instance of the class as kind ``name`` (a name already
    taken is refused: a site's kind is registered after the shipped ones are loaded, so it
    cannot take a shipped kind's name and break the shipped kind's loading later)."""

    def decorate(cls: K) -> K:
        if not cls.__module__.startswith("benchlib.kinds."):  # a site's kind
            from benchlib import kinds

            kinds.KINDS  # noqa: B018 (the shipped kinds loaded first)
        if name in KINDS:
            raise ValueError(f"kind {name!r} is already registered ({type(KINDS[name]).__name__})")
        KINDS[name] = cls()
        return cls

    return decorate
