"""Reading YAML input files (params files) as plain JSON-typed data, refusing what could hurt.

PyYAML's safe loader still takes duplicate keys (the last silently wins), expands aliases
without a bound (a "billion laughs" file of a few lines takes gigabytes once something walks
it), recurses once per nesting level (3,000 ``[`` end in a RecursionError), merges ``<<`` keys
as its version does (before 6.0.4, a copy per level: exponential), reads YAML 1.1 integers
(``016`` is octal 14, ``1:30`` is 90) and builds bytes (``!!binary``), dates, sets and other
non-JSON values. Params become notebook parameters, so :func:`load_yaml` returns only what JSON
can hold (text, numbers, booleans, null, lists, mappings with text keys), bounds depth and
merges itself, and names the place of anything else.
"""

from __future__ import annotations

import math
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from benchlib.errors import InputError

#: Largest params file read (bytes); a sweep definition is a few kilobytes.
MAX_FILE_BYTES = 1 << 20
#: Most alias uses (``*name``) in one file.
MAX_ALIASES = 100
#: Most points one params file may expand to (``benchlib sweep --max-points`` raises it).
MAX_POINTS = 10_000
#: Most values (scalars, lists and mappings, with aliases counted each time they are used).
MAX_NODES = 100_000
#: Deepest nesting of lists and mappings (a params file needs five levels).
MAX_DEPTH = 64
#: Integers YAML 1.1 reads otherwise than YAML 1.2 and people do: a leading zero (octal) and
#: base 60 (``1:30``); ``0x10`` and ``1_000`` mean what they say and stay allowed.
_OCTAL = re.compile(r"[-+]?0[0-9_]+")


class _YAML11Number:
    """A plain scalar YAML 1.1 reads as a number YAML 1.2 would not: refused with its place."""

    def __init__(self, text: str, reason: str) -> None:
        self.text, self.reason = text, reason


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and counts alias uses."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_uses = 0
        self.depth = 0
        self.merged = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.alias_uses += 1
            if self.alias_uses > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise InputError(f"line {mark.line + 1}: more than {MAX_ALIASES} aliases (*name); "
                                 "write the values out")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise InputError(f"line {mark.line + 1}, column {mark.column + 1}: lists and "
                                 f"mappings nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Merge ``<<`` keys here, not by PyYAML's version: each key once (the first mapping
        that has it wins, as YAML's merge spec says; the mapping's own keys win over all), and
        at most :data:`MAX_NODES` pairs merged in the whole file."""
        merged: list[tuple[Any, Any]] = []
        keys: set[Any] = set()
        own = []
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) \
                else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, "expected a mapping or "
                        f"list of mappings for merging, but found {source.id}", source.start_mark)
                self.flatten_mapping(source)
                for pair in source.value:
                    key = (pair[0].tag, pair[0].value) if isinstance(pair[0], yaml.ScalarNode) \
                        else id(pair[0])
                    if key not in keys:
                        keys.add(key)
                        merged.append(pair)
                self.merged += len(source.value)
                if self.merged > MAX_NODES:
                    raise InputError(f"line {node.start_mark.line + 1}: more than {MAX_NODES:,} "
                                     "values merged by << keys; write the values out")
        node.value = merged + own

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        text = str(node.value)
        if _OCTAL.fullmatch(text):
            digits = ("-" if text.startswith("-") else "") + (text.lstrip("+-").lstrip("0_") or "0")
            return _YAML11Number(text, f"has a leading zero, which YAML 1.1 reads as the octal "
                                       f"number {super().construct_yaml_int(node)}; write "
                                       f"{digits}, or quote it to give text")
        if ":" in text:
            return _YAML11Number(text, f"is a base-60 number in YAML 1.1 "
                                       f"({super().construct_yaml_int(node)}); quote it to give "
                                       "text")
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> Any:
        if ":" in str(node.value):
            return _YAML11Number(str(node.value), "is a base-60 number in YAML 1.1; quote it "
                                                  "to give text")
        return super().construct_yaml_float(node)


    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # <<: *base, merged by flatten_mapping
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise InputError(f"line {line}: duplicate key {key!r} (first at line "
                                     f"{seen[key]}); each key may appear once in a mapping")
                seen[key] = line
            except TypeError:  # an unhashable key: let PyYAML say so
                break
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_yaml_float)


def _type_name(value: object) -> str:
    names = {bytes: "binary data (!!binary)", set: "a set (!!set)"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__} value"


def _check_json_typed(value: object, where: str, budget: list[int]) -> None:
    """Raise InputError naming ``where`` unless ``value`` is JSON-typed; count nodes."""
    budget[0] -= 1
    if budget[0] < 0:
        raise InputError(f"more than {MAX_NODES:,} values once aliases are expanded; "
                         "a params file needs far fewer")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"{where or 'the file'}: not valid Unicode text (a lone surrogate "
                             "escape such as \\ud800)") from None
        return
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, _YAML11Number):
        raise InputError(f"{where or 'the file'}: {value.text} {value.reason}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{where}: {value} is not a finite number")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_json_typed(item, f"{where}[{index}]", budget)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"{where + '.' if where else ''}{key!r}: keys must be text, "
                                 f"not {_type_name(key)}; quote it")
            _check_json_typed(item, f"{where}.{key}" if where else key, budget)
        return
    hint = "; quote it to give text" if not isinstance(value, bytes) else "; give text"
    raise InputError(f"{where or 'the file'}: {_type_name(value)} is not allowed (only text, "
                     f"numbers, true/false, null, lists and mappings){hint}")


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line: where and what (PyYAML's own message quotes the line over several)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{context + ': ' if context else ''}{problem}"


def parse_yaml(text: str) -> Any:
    """Parse YAML text under the rules above; InputError (with a line) on anything refused."""
    loader = None
    try:
        loader = _StrictLoader(text)
        data = loader.get_single_data()
    except yaml.reader.ReaderError as error:
        line = text[:error.position].count("\n") + 1
        raise InputError(f"not valid YAML: line {line}: character {error.character!r} is not "
                         "allowed in YAML text") from None
    except yaml.YAMLError as error:
        raise InputError(f"not valid YAML: {_yaml_problem(error)}") from None
    finally:
        if loader is not None:
            loader.dispose()
    _check_json_typed(data, "", [MAX_NODES])
    return data


def load_yaml(path: str | Path, what: str = "params file") -> Any:
    """Read a YAML file as JSON-typed data; InputError naming ``path`` for anything refused
    (unreadable, too large, not UTF-8, invalid YAML, duplicate keys, too many aliases or
    values, non-JSON types)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{path}: is a folder, not a {what}")
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: not a regular file (a device, pipe or socket); give a "
                             f"{what}")
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(f"{path}: more than {MAX_FILE_BYTES:,} bytes; a {what} may hold "
                             f"at most {MAX_FILE_BYTES:,}")
    except OSError as error:
        raise InputError(f"{path}: cannot read {what} "
                         f"({(error.strerror or str(error)).lower()})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise InputError(f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} on line "
                         f"{line}); save the file as UTF-8") from None
    try:
        return parse_yaml(text)
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
