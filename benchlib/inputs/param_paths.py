"""Path parameters of a params file: made absolute against the folder the sweep started in,
and compared as such (``imgs`` and ``./imgs`` name one folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib.errors import ConfigError

#: Paths, made absolute before papermill (and before points are compared).
PATH_PARAMETERS = ("data_dir", "volume", "output", "token_file")


def resolve_paths(parameters: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Path parameters made absolute against ``base_dir`` (where the sweep was started);
    ConfigError naming the parameter for a path whose symbolic links loop (``ln -s a a``)."""
    resolved = dict(parameters)
    for key in PATH_PARAMETERS:
        if resolved.get(key):
            try:
                resolved[key] = str((base_dir / str(resolved[key])).resolve())
            except (RuntimeError, OSError) as error:  # RuntimeError: pathlib's symlink loop
                raise ConfigError(f"{key}: bad value {resolved[key]!r}: its symbolic links "
                                  f"loop ({error}); give the folder itself") from None
    return resolved


def same_paths(points: list[tuple[str, dict[str, Any], int]],
               base_dir: Path) -> list[tuple[str, str, object, object, str]]:
    """(notebook, parameter, first value, other value, absolute path) for each pair of points
    (notebook, parameters, repeat) that differ only in how a path parameter is spelled."""
    found = []
    first: dict[str, dict[str, Any]] = {}
    for notebook, parameters, repeat in points:
        try:
            resolved = resolve_paths(parameters, base_dir)
        except ConfigError:
            continue  # a link loop: named where the points are validated
        key = json.dumps([notebook, resolved, repeat], sort_keys=True, default=str)
        other = first.setdefault(key, parameters)
        if other is parameters:
            continue
        found += [(notebook, name, other.get(name), parameters.get(name), resolved[name])
                  for name in PATH_PARAMETERS if other.get(name) != parameters.get(name)]
    return found
