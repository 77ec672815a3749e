"""``--json``: each command's answer as one document of a versioned schema (docs/json.md). The
models are :mod:`.schema` (the documents) and :mod:`.rows` (their tables' rows), the schema's one
source; :mod:`.render` fills them from the typed results the commands print. This module is
what every command needs without importing pydantic: the option, stdout kept aside for the
document, and the document of an error."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--json FILE`` (``-``: stdout) on a command that prints results."""
    parser.add_argument("--json", metavar="FILE", help="also write the answer as a JSON document "
                        "to this file (docs/json.md); - prints it on stdout instead, the text "
                        "going to stderr")


@contextlib.contextmanager
def aside(args: argparse.Namespace) -> Iterator[None]:
    """While the command runs: with ``--json -``, what it prints goes to stderr and stdout is
    kept for the document (``args.json_stdout``); with ``--json FILE``, FILE is checked first
    (bad input before any work, as ``--junit``)."""
    target = getattr(args, "json", None)
    if target is None:
        yield
    elif target != "-":
        from benchlib.records.paths import check_output_file

        check_output_file("--json", target)
        yield
    else:
        args.json_stdout = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            yield


def write_error(args: argparse.Namespace, message: str, code: int) -> None:
    """With ``--json``, the document of a command stopped by an error (``error``, its exit
    status); nothing when even that cannot be written (the message is on stderr)."""
    if getattr(args, "json", None):
        from benchlib.cli.documents import render

        render.write_error(args, message, code)
