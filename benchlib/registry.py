"""The benchmark registry: every benchmark benchlib runs, in one place.

Each entry names the notebook (``notebooks/<notebook>.ipynb``), the ``benchmark`` value its
records carry, the config class that validates its parameters, the name of its kind (a
:class:`benchlib.kinds.Kind` registered under that name in :mod:`benchlib.kinds`, a higher
layer), what it does (``activity``, ``trains``, the config fields it ``ignores``) and its title
and description (the notebook's heading). The shipped benchmarks are the variants the kind
folders' configs declare (:func:`shipped`, found by :mod:`benchlib.discovery`); a site adds its
own from its own package through the ``benchlib.benchmarks`` entry-point group
(:func:`benchmarks` imports each entry point's module once, which calls :func:`register`;
docs/architecture.md). Both pass :func:`register`'s check. This module names no kind.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from benchlib import discovery
from benchlib.errors import ConfigError
from benchlib.inputs.benchmark import Benchmark
from benchlib.inputs.config import CommonConfig

#: The entry-point group a site's package names its benchmark modules in.
ENTRY_POINT_GROUP = "benchlib.benchmarks"


#: The shipped benchmarks, read from the kind folders on the first call of :func:`shipped`.
_FOLDERS: list[Benchmark] = []
_REGISTERED: list[Benchmark] = []
_BY_BENCHMARK: dict[str, Benchmark] = {}
_PLUGINS_LOADED = False


def register(entry: Benchmark) -> Benchmark:
    """Add a site's benchmark (from its package's ``benchlib.benchmarks`` entry point); a
    notebook or ``benchmark`` value already registered is refused."""
    return _add(entry, _REGISTERED)


def _add(entry: Benchmark, into: list[Benchmark]) -> Benchmark:
    known = (*shipped(), *_REGISTERED) if into is _REGISTERED else _FOLDERS
    taken = {b.notebook for b in known} | {b.benchmark for b in known}
    if entry.notebook in taken or entry.benchmark in taken:
        raise ValueError(f"benchmark {entry.benchmark!r} (notebook {entry.notebook!r}) is "
                         "already registered")
    into.append(entry)
    return entry


def shipped() -> tuple[Benchmark, ...]:
    """The benchmarks benchlib ships: the variants each kind folder's config declares
    (``VARIANTS``, one notebook each; :mod:`benchlib.discovery`), in the folders' order, read
    on the first call."""
    if not _FOLDERS:
        for module in discovery.role_modules("config"):
            for entry in module.VARIANTS:
                _add(entry, _FOLDERS)
    return tuple(_FOLDERS)


def benchmarks() -> tuple[Benchmark, ...]:
    """Every benchmark: the shipped ones, then those of the ``benchlib.benchmarks`` entry
    points (each entry point's module imported once, on the first call). A site's module that
    cannot be imported, or that registers a name already taken, is a ConfigError naming the
    entry point and its package."""
    global _PLUGINS_LOADED
    if not _PLUGINS_LOADED:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                point.load()
            except Exception as error:
                package = point.dist.name if point.dist is not None else "unknown package"
                raise ConfigError(f"the {ENTRY_POINT_GROUP} entry point {point.name!r} = "
                                  f"{point.value!r} (package {package}) failed to load: "
                                  f"{type(error).__name__}: {error}") from error
        _PLUGINS_LOADED = True
    return (*shipped(), *_REGISTERED)


def training() -> set[str]:
    """The ``benchmark`` values whose iterations are optimizer steps (``trains``)."""
    return {b.benchmark for b in benchmarks() if b.trains}


#: The benchmarks ``benchlib diagnose`` runs its ladder on.
DIAGNOSED = ("train", "inference")


def by_benchmark(benchmark: object) -> Benchmark | None:
    """The entry whose records carry ``benchmark`` (None for a value no benchmark has). A dict
    lookup: tables ask it once per row."""
    entries = benchmarks()
    if len(_BY_BENCHMARK) != len(entries):  # built once, again after a site's register()
        _BY_BENCHMARK.clear()
        _BY_BENCHMARK.update({b.benchmark: b for b in entries})
    try:
        return _BY_BENCHMARK.get(benchmark)  # type: ignore[arg-type]
    except TypeError:  # an unhashable value (a list in a hand-built table): no benchmark
        return None


def node_probe() -> Benchmark:
    """The node probe's entry: diagnose runs it first, datasheet figures are set against it."""
    return next(b for b in shipped() if b.kind == "node_probe")


def by_notebook(name: str) -> Benchmark | None:
    """The entry of ``notebooks/<name>.ipynb`` (None for a notebook benchlib does not ship)."""
    return next((b for b in benchmarks() if b.notebook == name), None)


def notebook_configs() -> dict[str, tuple[type[CommonConfig], dict[str, object]]]:
    """Notebook name -> (config class, fixed parameters)."""
    return {b.notebook: (b.config, b.fixed) for b in benchmarks()}


def config_class(name: str) -> type[CommonConfig]:
    """The registered config class called ``name`` (KeyError naming the known ones)."""
    classes = {b.config.__name__: b.config for b in benchmarks()}
    if name not in classes:
        raise KeyError(f"{name} is not a registered config (known: {', '.join(sorted(classes))})")
    return classes[name]


def entry_of(config: CommonConfig) -> Benchmark:
    """The entry that runs ``config`` (its config class and ``benchmark``)."""
    benchmark = getattr(config, "benchmark", None)
    for entry in benchmarks():
        if type(config) is entry.config and entry.benchmark == benchmark:
            return entry
    raise KeyError(f"no registered benchmark runs a {type(config).__name__} "
                   f"(benchmark {benchmark!r})")
