"""Params files: a YAML file read strictly, validated whole, expanded into points.

A point is one notebook with one set of parameters and a repeat index; its id is a hash of
those, so a re-run finds the points already done by their parameters. The file is read by
:func:`benchlib.inputs.yaml_input.load_yaml` (data only, never code) and every point is validated by
its notebook's config class before anything runs; papermill later gets the validated config's
JSON dump (:func:`papermill_parameters`), never the raw YAML.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from benchlib import PROJECT_ROOT
from benchlib.errors import ConfigError, InputError
from benchlib.inputs.config import check_campaign, describe_validation_error
from benchlib.inputs.executors import SETTINGS, LocalExecutor, Settings
from benchlib.inputs.layout import REPORT
from benchlib.inputs.param_paths import resolve_paths, same_paths
from benchlib.inputs.unknown_names import unknown_parameter
from benchlib.inputs.yaml_input import MAX_POINTS, load_yaml
from benchlib.registry import by_notebook, notebook_configs

NOTEBOOK_DIR = PROJECT_ROOT / "notebooks"
RESERVED_CAMPAIGNS = (REPORT,)  #: folder names the readers skip under an outputs root
#: A notebook of a test's own ``notebook_dir``: a plain name, never a path.
NOTEBOOK_NAME = re.compile(r"[A-Za-z0-9_]+")
#: The longest point file stem. Files named after a point add at most 42 bytes to it (the
#: atomic-write temporary of a kept failure: ``.<stem>-<22-character stamp>.json.<8>.tmp``),
#: and file systems allow 255 bytes per name; longer stems are shortened (:attr:`Point.name`).
MAX_STEM_BYTES = 200


def allowed_notebooks(notebook_dir: Path | None = None) -> tuple[str, ...]:
    """The notebooks a params file may name: the registry's benchmarks (``notebooks/``), or,
    for another ``notebook_dir`` (tests), the plain names of the notebooks in it."""
    if notebook_dir is None or Path(notebook_dir).resolve() == NOTEBOOK_DIR.resolve():
        return tuple(sorted(notebook_configs()))
    return tuple(sorted(p.stem for p in Path(notebook_dir).glob("*.ipynb")
                        if NOTEBOOK_NAME.fullmatch(p.stem)))


def _listed(names: list[str], value: object) -> str:
    """``'a' is `` / ``'a', 'b' are `` in front of a message about names of a list ``value``
    ('' for one name: the message already shows it as the bad value)."""
    if isinstance(value, str):
        return ""
    return f"{', '.join(map(repr, names))} {'is' if len(names) == 1 else 'are'} "


class SweepFile(BaseModel):
    """The params YAML: campaign, notebook(s), base parameters, grid, repeats, executor."""

    model_config = ConfigDict(extra="forbid", strict=True)
    campaign: str
    notebook: str | list[str | dict[str, dict[str, Any]]]
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    repeats: PositiveInt = 1
    #: ``interleaved``: every point once, then every point again (ABCABC), so that slow drift of
    #: the machine spreads over all configurations; ``grouped``: a point's repeats back to back.
    repeat_order: Literal["interleaved", "grouped"] = "interleaved"
    executor: Settings = Field(default_factory=LocalExecutor, discriminator="kind")

    @field_validator("campaign")
    @classmethod
    def _not_a_reserved_name(cls, value: str) -> str:
        check_campaign(value)
        if value in RESERVED_CAMPAIGNS:
            raise ValueError(f"{value!r} is the name of the report folder; choose another name")
        return value

    @field_validator("grid")
    @classmethod
    def _non_empty_axes(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        empty = [k for k, v in grid.items() if not v]
        if empty:
            raise ValueError(f"grid axes need at least one value: {', '.join(empty)}")
        return grid

    @field_validator("notebook")
    @classmethod
    def _one_name_per_mapping(cls, value: str | list) -> str | list:
        for item in [] if isinstance(value, str) else value:
            if isinstance(item, dict) and len(item) != 1:
                raise ValueError("a notebook entry with parameters is one mapping "
                                 "{name: {parameter: value}}; got keys " + ", ".join(item))
        return value

    @field_validator("notebook")
    @classmethod
    def _each_notebook_once(cls, value: str | list) -> str | list:
        """A notebook listed twice would keep only its last parameters, silently."""
        names = [item if isinstance(item, str) else next(iter(item), "")
                 for item in ([] if isinstance(value, str) else value)]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            counts = ", ".join(f"{name!r} is listed {names.count(name)} times" for name in twice)
            raise ValueError(f"{counts}; list each notebook once (its own parameters in one "
                             "mapping), and put the values that should differ in the grid")
        return value

    @field_validator("notebook")
    @classmethod
    def _registered_names(cls, value: str | list, info: ValidationInfo) -> str | list:
        """A notebook is a name from the registry (or, with a test's own ``notebook_dir``, a
        plain name), never a path: params are data and cannot run a file elsewhere."""
        items = [value] if isinstance(value, str) else value
        names = [name for item in items for name in ([item] if isinstance(item, str) else item)]
        notebook_dir = (info.context or {}).get("notebook_dir")
        if notebook_dir is None or Path(notebook_dir).resolve() == NOTEBOOK_DIR.resolve():
            bad = [name for name in names if name not in notebook_configs()]
            if bad:
                raise ValueError(f"{_listed(bad, value)}not a benchmark notebook; allowed: "
                                 f"{', '.join(allowed_notebooks())}")
            return value
        bad = [name for name in names if not NOTEBOOK_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"{_listed(bad, value)}not a notebook name (letters, digits and _); "
                             f"allowed: {', '.join(allowed_notebooks(notebook_dir))}")
        return value

    @property
    def notebooks(self) -> list[str]:
        """The notebook names as a list."""
        items = [self.notebook] if isinstance(self.notebook, str) else self.notebook
        return [item if isinstance(item, str) else next(iter(item)) for item in items]

    @property
    def overrides(self) -> dict[str, dict[str, Any]]:
        """Parameters set for one notebook only (``notebook: [a, {b: {iterations: epoch}}]``);
        they replace ``base`` values for that notebook, and grid values replace them."""
        items = [] if isinstance(self.notebook, str) else self.notebook
        return {name: dict(values or {}) for item in items if isinstance(item, dict)
                for name, values in item.items()}


@dataclass(frozen=True)
class Point:
    """One execution: a notebook, its parameters and a repeat index."""

    notebook: str
    parameters: dict[str, Any]
    repeat: int
    label: str
    order: int = 0  #: position in the sweep's run order (recorded as ``sweep_order``)

    @property
    def point_id(self) -> str:
        """Stable hash of notebook, parameters and repeat."""
        key = json.dumps([self.notebook, self.parameters, self.repeat], sort_keys=True, default=str)
        return hashlib.sha1(key.encode()).hexdigest()[:10]

    @property
    def name(self) -> str:
        """File stem: notebook, the grid values that vary, repeat, id. A stem over
        :data:`MAX_STEM_BYTES` keeps the id and as much of the label as fits, followed by a hash
        of the whole label (labels that differ only in their tail stay apart)."""
        name = f"{self.label}-{self.point_id}"
        if len(name.encode()) <= MAX_STEM_BYTES:
            return name
        digest = hashlib.sha1(self.label.encode()).hexdigest()[:8]
        room = MAX_STEM_BYTES - len(f"--{digest}-{self.point_id}")
        head = self.label.encode()[:room].decode(errors="ignore")
        return f"{head}--{digest}-{self.point_id}"


@dataclass(frozen=True)
class Sweep:
    """A validated params file and its points."""

    path: Path
    spec: SweepFile
    points: list[Point]
    notebook_dir: Path = NOTEBOOK_DIR

    @property
    def campaign(self) -> str:
        return self.spec.campaign


def _slug(value: object) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "", str(value))[:24] or "x"


def notebook_path(name: str, notebook_dir: Path = NOTEBOOK_DIR) -> Path:
    """Where notebook ``name`` is: a site's benchmark in its own folder (its registry entry's
    ``folder``), any other in ``notebook_dir`` (benchlib's ``notebooks/``, or a test's)."""
    entry = by_notebook(name)
    if entry is not None and entry.folder is not None and \
            Path(notebook_dir).resolve() == NOTEBOOK_DIR.resolve():
        return Path(entry.folder) / f"{name}.ipynb"
    return Path(notebook_dir) / f"{name}.ipynb"


def notebook_parameters(name: str, notebook_dir: Path = NOTEBOOK_DIR) -> dict[str, Any]:
    """The ``parameters`` cell's names and defaults of notebook ``name`` (papermill)."""
    import papermill

    path = notebook_path(name, notebook_dir)
    return {k: v["default"] for k, v in papermill.inspect_notebook(str(path)).items()}


def expand(spec: SweepFile, accepted: dict[str, set[str]] | None = None) -> list[Point]:
    """Every notebook x grid combination x repeat, base parameters under each, in run order
    (``repeat_order``: interleaved ABCABC by default, or grouped AAABBBCCC).

    With ``accepted`` (parameter names per notebook), each notebook gets only the parameters it
    takes, so one file can drive notebooks with different parameters; points that become equal
    are kept once.
    """
    axes = list(spec.grid)
    configurations = []
    for notebook in spec.notebooks:
        for values in itertools.product(*(spec.grid[a] for a in axes)):
            chosen = {**spec.base, **spec.overrides.get(notebook, {}),
                      **dict(zip(axes, values, strict=True)), "campaign": spec.campaign}
            if accepted is not None and notebook in accepted:
                chosen = {k: v for k, v in chosen.items() if k in accepted[notebook]}
            label = "-".join([notebook, *(_slug(chosen[a]) for a in axes if a in chosen)])
            configurations.append((notebook, chosen, label))
    runs = [(c, r) for r in range(spec.repeats) for c in configurations] \
        if spec.repeat_order == "interleaved" else \
        [(c, r) for c in configurations for r in range(spec.repeats)]
    points: dict[str, Point] = {}
    for (notebook, chosen, label), repeat in runs:
        point = Point(notebook, chosen, repeat,
                      f"{label}-r{repeat}" if spec.repeats > 1 else label, len(points))
        points.setdefault(point.name, point)
    return list(points.values())


def _origin(spec: SweepFile, key: str, notebook: str = "") -> str:
    if key in spec.grid:
        return f"grid.{key}"
    if key in spec.overrides.get(notebook, {}):
        return f"notebook.{notebook}.{key}"
    return f"base.{key}"


def _check_notebooks(spec: SweepFile, notebook_dir: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Parameter names of each listed notebook, and errors for missing notebooks / unknown keys."""
    errors: list[str] = []
    accepted: dict[str, set[str]] = {}
    for name in spec.notebooks:
        path = notebook_path(name, notebook_dir)
        if path.is_file():
            accepted[name] = set(notebook_parameters(name, notebook_dir))
        else:
            available = [n for n in allowed_notebooks(notebook_dir)
                         if notebook_path(n, notebook_dir).is_file()]
            errors.append(f"notebook: {name!r} not found as {path} (write it with python "
                          f"tools/make_notebooks.py); available: {', '.join(available)}")
    if accepted:
        allowed = set().union(*accepted.values())
        for key in [*spec.base, *spec.grid]:
            if key not in allowed:
                errors.append(unknown_parameter(_origin(spec, key), key, allowed, list(accepted)))
        for name, values in spec.overrides.items():
            for key in values:
                if name in accepted and key not in accepted[name]:
                    errors.append(unknown_parameter(f"notebook.{name}.{key}", key,
                                                    accepted[name], [name]))
    return accepted, errors


def _validate_points(spec: SweepFile, points: list[Point], base_dir: Path) -> list[str]:
    errors: list[str] = []
    for point in points:
        try:
            resolved = resolve_paths(point.parameters, base_dir)
        except ConfigError as error:
            field = str(error).split(":", 1)[0]
            errors.append(f"{_origin(spec, field, point.notebook)}{str(error)[len(field):]}")
            continue
        if point.notebook not in notebook_configs():
            continue
        config_class, fixed = notebook_configs()[point.notebook]
        values = {k: v for k, v in resolved.items() if k in config_class.model_fields}
        try:
            config_class(**{**values, **fixed})
        except ValidationError as error:
            for line in describe_validation_error(error, fields=config_class.model_fields):
                field = line.split(":", 1)[0].split(".", 1)[0]  # patch_shape.0: its field
                errors.append(f"{_origin(spec, field, point.notebook)}{line[len(field):]}"
                              if field in config_class.model_fields else line)
    return list(dict.fromkeys(errors + _same_paths(spec, points, base_dir)))


def _same_paths(spec: SweepFile, points: list[Point], base_dir: Path) -> list[str]:
    """Points whose parameters are equal once paths are made absolute (``imgs`` and
    ``./imgs``) would run the same thing twice under two ids: refused, naming both values."""
    return [f"{_origin(spec, name, notebook)}: {first!r} and {second!r} are the same path "
            f"({resolved}), so their points would run twice; list it once"
            for notebook, name, first, second, resolved in same_paths(
                [(p.notebook, p.parameters, p.repeat) for p in points], base_dir)]


def _explain_key_error(line: str) -> str:
    """``executor.slurm.x: ...`` -> ``executor.x: ...``; unknown keys get the allowed ones."""
    for kind, model in SETTINGS.items():
        if line.startswith(f"executor.{kind}."):
            line = "executor." + line[len(f"executor.{kind}."):]
            if "unknown parameter" in line:
                return f"{line} (allowed with kind {kind}: {', '.join(model.model_fields)})"
            return line
    if "unknown parameter" in line:
        return f"{line} (allowed keys: {', '.join(SweepFile.model_fields)})"
    return line


def count_points(spec: SweepFile) -> int:
    """How many points ``spec`` expands to at most (before points that coincide are merged)."""
    count = len(spec.notebooks) * spec.repeats
    for values in spec.grid.values():
        count *= len(values)
    return count


def load_sweep(path: str | Path, notebook_dir: Path = NOTEBOOK_DIR,
               base_dir: Path | None = None, max_points: int = MAX_POINTS,
               campaign: str | None = None) -> Sweep:
    """Read and validate a params file as a whole; raise ConfigError listing every problem.
    ``campaign`` names the campaign in place of the file's (``benchlib calibrate``'s rounds).

    The file is read by :func:`benchlib.inputs.yaml_input.load_yaml` (UTF-8, no duplicate keys,
    bounded aliases, JSON-typed values only) and may expand to at most ``max_points`` points.
    """
    path = Path(path)
    base_dir = base_dir or Path.cwd()
    try:
        raw = load_yaml(path)
    except InputError as error:
        raise ConfigError(str(error)) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with campaign, notebook, base, grid")
    if campaign is not None:
        raw = {**raw, "campaign": campaign}
    try:
        spec = SweepFile.model_validate(raw, context={"notebook_dir": notebook_dir})
    except ValidationError as error:
        lines = [_explain_key_error(line) for line in describe_validation_error(error)]
        raise ConfigError("\n".join(f"{path}: {line}" for line in lines)) from None
    count = count_points(spec)
    if count > max_points:
        axes = " x ".join(f"{len(v)} {k}" for k, v in spec.grid.items()) or "no grid"
        raise ConfigError(f"{path}: grid: {count:,} points ({len(spec.notebooks)} notebooks x "
                          f"{axes} x {spec.repeats} repeats) is more than the limit of "
                          f"{max_points:,}; split the file, or raise the limit with "
                          f"--max-points {count}")
    accepted, errors = _check_notebooks(spec, notebook_dir)
    points = expand(spec, accepted)
    if not errors:
        errors = _validate_points(spec, points, base_dir)
    if errors:
        raise ConfigError("\n".join(f"{path}: {line}" for line in errors))
    return Sweep(path, spec, points, notebook_dir)


def papermill_parameters(point: Point, base_dir: Path) -> dict[str, Any]:
    """The values papermill writes into the notebook's parameters cell: the validated
    config's JSON dump of the point's parameters (paths made absolute), never the raw input.

    Notebooks without a config class get the point's values only if every one is JSON-typed
    text, number, boolean, null, list or mapping (the params loader guarantees it)."""
    parameters = resolve_paths(point.parameters, base_dir)
    bad = sorted(k for k in parameters if not k.isidentifier() or keyword.iskeyword(k))
    if bad:
        raise ConfigError(f"{point.notebook}: parameter names must be Python names: "
                          f"{', '.join(map(repr, bad))}")
    if point.notebook not in notebook_configs():
        return json.loads(json.dumps(parameters, allow_nan=False))
    config_class, fixed = notebook_configs()[point.notebook]
    unknown = sorted(set(parameters) - set(config_class.model_fields))
    if unknown:
        raise ConfigError(f"{point.notebook}: unknown parameters {', '.join(unknown)}")
    try:
        config = config_class(**{**parameters, **fixed})
    except ValidationError as error:
        raise ConfigError("\n".join(describe_validation_error(
            error, f"{point.name}: ", config_class.model_fields))) from None
    return config.model_dump(mode="json", include=set(parameters))
