"""The base of every ``benchlib`` command (asv's shape): a :class:`Command` adds its parser and
runs, importing nothing heavy until it runs (``--help`` stays fast); what every command prints
through (:func:`show`, :func:`show_wrapped`) and tables that fit the terminal (:func:`show_table`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import pandas as pd


class Command:
    """One subcommand: name, help (description, epilog); subclasses add options and run."""

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str | None] = None
    epilog: ClassVar[str | None] = None

    @classmethod
    def setup_arguments(cls, subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add this command's parser to ``subparsers``; it runs :meth:`run`."""
        description = cls.description  # a raw epilog keeps its lines; the description wraps
        if description and cls.epilog:  # to argparse's own width (no import: --help stays fast)
            description = textwrap.fill(description, shutil.get_terminal_size().columns - 2)
        parser = subparsers.add_parser(
            cls.name, help=cls.help, description=description, epilog=cls.epilog,
            formatter_class=(argparse.RawDescriptionHelpFormatter if cls.epilog
                             else argparse.HelpFormatter))
        cls.add_arguments(parser)
        parser.set_defaults(handler=cls)
        return parser

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add the command's options to its ``parser``."""

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Do what ``args`` ask; the exit status (errors raised: :func:`benchlib.cli.main`)."""
        raise NotImplementedError


def show(text: str) -> None:
    """Print record text; what the output's encoding cannot hold (a lone surrogate) as ``?``."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    print(text.encode(encoding, errors="replace").decode(encoding, errors="replace"))


#: The narrowest a wrapped text column gets, however wide the figures are.
MIN_TEXT = 30


def width() -> int:
    """The terminal's columns: :func:`benchlib.formatting.terminal_width`."""
    from benchlib.formatting import terminal_width
    return terminal_width()


def shared_parts(labels: Sequence[str], separator: str = ", ") -> tuple[list[str], list[str]]:
    """``labels`` (``key=value, ...``) without the parts every label has, and those parts."""
    split = [str(label).split(separator) for label in labels]
    if len(split) < 2:
        return [str(label) for label in labels], []
    common = [part for part in split[0] if all(part in parts for parts in split[1:])]
    kept = [separator.join(p for p in parts if p not in common) or "(all alike)" for parts in split]
    return kept, common


def fold_constant(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` without those of ``columns`` that hold one value in every row, and a line for
    each said once instead (``interval (every row): ...``; of one row, ``interval: ...``)."""
    from benchlib.formatting import missing
    from benchlib.records.configuration import varies

    said, dropped = [], []
    for column in columns:
        if column not in frame or frame.empty:
            continue
        if not varies(frame[column], missing_too=True):
            if value := ("" if missing(first := frame[column].iloc[0]) else str(first)):
                said.append(f"{column.replace('_', ' ')}"
                            f"{' (every row)' * (len(frame) > 1)}: {value}")
            dropped.append(column)
    return frame.drop(columns=dropped), said


def fit(frame: pd.DataFrame, text: str, formatters: dict | None = None,
        columns: int | None = None) -> str:
    """``frame`` as text within ``columns`` (default: :func:`width`): its other columns first as
    pandas prints them, then column ``text`` left-aligned, each cell wrapped under its start."""
    columns = columns or width()
    if text not in frame or frame.empty:
        return frame.to_string(index=False, na_rep="", formatters=formatters)
    figures = frame.drop(columns=[text])
    lines = (figures.to_string(index=False, na_rep="", formatters=formatters).splitlines()
             if len(figures.columns) else [""] * (len(frame) + 1))
    head, rows = lines[0], lines[1:]
    indent = max(len(line) for line in lines) + 2
    room = max(MIN_TEXT, columns - indent - 2)
    out = [head.ljust(indent) + text]
    for line, cell in zip(rows, frame[text], strict=True):
        wrapped = textwrap.wrap(str(cell), room, break_on_hyphens=False) or [""]
        out.append(line.ljust(indent) + wrapped[0])
        out += [" " * (indent + 2) + more for more in wrapped[1:]]  # set in: where a cell ends
    return "\n".join(out)


def relative(texts: Iterable[object]) -> list[str]:
    """``texts`` with paths under the current folder relative to it (data/demo-images)."""
    from benchlib.publish.local_paths import builder_root, scrub

    here = builder_root()  # once for all the texts: it resolves the current folder
    return [scrub(str(text), here) for text in texts]


def wrapped(line: str, columns: int | None = None, indent: str = "  ") -> str:
    """One long line (a list of nodes, a reason) wrapped to the terminal, continued indented;
    paths under the current folder relative to it (:func:`relative`)."""
    return textwrap.fill(relative([line])[0], columns or width(), subsequent_indent=indent,
                         break_on_hyphens=False)


def show_wrapped(text: str, indent: str = "  ") -> None:
    """Print each line of ``text`` wrapped (:func:`wrapped`), continued ``indent`` further in."""
    for line in text.splitlines() or [""]:
        lead = line[:len(line) - len(line.lstrip(" "))]
        show(wrapped(line, indent=lead + indent) if line.strip() else "")


def show_table(frame: pd.DataFrame, text: str, fold: Sequence[str] = (),
               formatters: dict | None = None, separator: str = ", ") -> None:
    """Print ``frame`` fitted to the terminal: the ``fold`` columns of one value and the parts
    of column ``text`` every row shares said once above, paths relative, then :func:`fit`."""
    frame, said = fold_constant(frame, fold)
    if text in frame:  # paths under this folder as typed from it (data/demo-images)
        labels, common = shared_parts(relative(frame[text]), separator)
        frame = frame.assign(**{text: labels})
        said += [f"every {text}: " + separator.join(common)] if common else []
    for line in said:
        show(wrapped(line))
    show(fit(frame, text, formatters))

