"""The base of every ``benchlib`` command (asv's shape): a :class:`Command` adds its own parser
to the command's subparsers (:meth:`Command.setup_arguments`) and runs what was asked
(:meth:`Command.run`). Command modules import nothing heavy until they run, so that ``benchlib
--help`` stays fast."""

from __future__ import annotations

import argparse
import sys
from typing import ClassVar


class Command:
    """One subcommand: its name and one-line help (and, when it says more, a description and
    an epilog); subclasses add their options and run."""

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str | None] = None
    epilog: ClassVar[str | None] = None

    @classmethod
    def setup_arguments(cls, subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add this command's parser to ``subparsers``; it runs :meth:`run`."""
        parser = subparsers.add_parser(
            cls.name, help=cls.help, description=cls.description, epilog=cls.epilog,
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
        """Do what ``args`` ask; the exit status (errors are raised, :func:`benchlib.cli.main`
        turns them into one message and their exit code)."""
        raise NotImplementedError


def show(text: str) -> None:
    """Print record text; what the output's encoding cannot hold (a lone surrogate) as ``?``."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    print(text.encode(encoding, errors="replace").decode(encoding, errors="replace"))
