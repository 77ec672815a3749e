"""Benchmark kinds: one registered object per kind carrying what differs between kinds (what it
records, how its runs are told: :class:`~benchlib.kinds.base.Kind`), looked up from a config or
a record's ``benchmark`` through the registry's entries (:mod:`benchlib.registry`).

The shipped kinds register themselves (``@register_kind``) when their folders' ``kind`` modules
are imported, on the first look-up (:func:`get`, ``KINDS``): importing this package (as the
record schema does, for the kinds' ``columns`` modules) imports no kind. A site's kinds come
from its package's ``benchlib.benchmarks`` entry point, imported by
:func:`benchlib.registry.benchmarks`. A kind's notebook cells are its layout,
:mod:`benchlib.publish.benchmark_notebook.layouts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlib import discovery, registry
from benchlib.kinds import base
from benchlib.kinds.base import Kind, register_kind

if TYPE_CHECKING:
    import pandas as pd

    from benchlib.inputs.config import CommonConfig

__all__ = ["KINDS", "Kind", "data_path", "fact_of_rows", "get", "is_probe", "kind_named", "kind_of",
           "register_kind", "run_target"]


_SHIPPED_LOADED = False


def _registered() -> dict[str, Kind]:
    """Every registered kind, the shipped ones imported on the first call."""
    global _SHIPPED_LOADED
    if not _SHIPPED_LOADED:
        discovery.role_modules("kind")
        _SHIPPED_LOADED = True
    return base.KINDS


def __getattr__(name: str) -> object:
    if name == "KINDS":
        return _registered()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str) -> Kind:
    """The kind registered as ``name``; an unknown name is a KeyError naming the known kinds."""
    found = _registered()
    if name not in found:
        raise KeyError(f"no kind is registered as {name!r} (known: {', '.join(sorted(found))})")
    return found[name]


def _kind(entry: registry.Benchmark) -> Kind:
    found = _registered()
    if entry.kind not in found:
        raise KeyError(f"benchmark {entry.benchmark!r} names kind {entry.kind!r}, which no module "
                       f"registered (known: {', '.join(sorted(found))})")
    return found[entry.kind]


def kind_of(config: CommonConfig) -> Kind:
    """The kind that runs ``config`` (the entry of its config class and ``benchmark``)."""
    return _kind(registry.entry_of(config))


def kind_named(benchmark: object) -> Kind | None:
    """The kind of records whose ``benchmark`` column is ``benchmark`` (None when no
    registered benchmark has that value)."""
    entry = registry.by_benchmark(benchmark)
    return _kind(entry) if entry is not None else None


def fact_of_rows(benchmarks: pd.Series, fact: str, default: object = None) -> pd.Series:
    """Each row's kind's ``fact`` (a :class:`Kind` attribute such as ``samples`` or
    ``lab_units``) from the rows' ``benchmark`` column; ``default`` where no kind has that
    benchmark. Each benchmark is looked up once."""
    found = {b: getattr(kind_named(b), fact, default) for b in dict.fromkeys(benchmarks)}
    return benchmarks.map(lambda b: found.get(b, default))


def is_probe(benchmark: object) -> bool:
    """Whether records of ``benchmark`` come from a probe of the node (not a workload)."""
    kind = kind_named(benchmark)
    return kind is not None and kind.probe


def data_path(config: CommonConfig) -> str:
    """The data ``config`` reads (its kind's :meth:`~benchlib.kinds.base.Kind.data_path`): a
    folder or file, '' for synthetic data."""
    return kind_of(config).data_path(config)


def run_target(config: CommonConfig) -> str:
    """``module:function`` that runs ``config`` (its kind's run function)."""
    return kind_of(config).run
