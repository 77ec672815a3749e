"""The ``benchlib`` command: one module per subcommand, each a :class:`~benchlib.cli.base.Command`
listed once in :data:`COMMANDS` (which ``benchlib --help`` lists), here or in the feature folder
that owns it (``diagnosis``, ``fleet``, ``history``, ``report``: its ``command`` module); :func:`main` turns
benchlib's exceptions (:mod:`benchlib.errors`) into one message and their exit code."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Iterator

from benchlib import formatting
from benchlib.cli import calibrate, check, data, index, results, status, sweep
from benchlib.cli.base import Command
from benchlib.cli.documents import aside, write_error
from benchlib.compare import command as compare
from benchlib.diagnosis import command as diagnose
from benchlib.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_UNCERTIFIED,
    BenchlibError,
    Terminated,
    describe_os_error,
)
from benchlib.fleet import command as fleet
from benchlib.history import command as history
from benchlib.report import command as report

#: Every subcommand, in the order ``benchlib --help`` lists them.
COMMANDS: tuple[type[Command], ...] = (
    sweep.Sweep, status.Status, diagnose.Diagnose, data.Data, results.Results, report.Report,
    check.Check, compare.Compare, calibrate.Calibrate, index.Index, history.History,
    fleet.Fleet)
DESCRIPTION = ("Benchmark deep-learning GPU nodes: run params files as campaigns of notebooks, "
               "follow them, diagnose a node, read, check and compare the results, and publish "
               "them as an HTML report. `benchlib COMMAND --help` says more about each command.")
EPILOG = (f"exit status: 0 success; {EXIT_FAILURE} a failure while working (a point could not "
          "be written, the campaign is in use, --strict with failed points); "
          f"{EXIT_BAD_INPUT} bad input (params file, paths, options); "
          f"{EXIT_UNCERTIFIED} check / compare / fleet: "
          "nothing failed but some runs cannot be certified; "
          f"{EXIT_INTERRUPTED} interrupted (Ctrl-C); {EXIT_TERMINATED} terminated (SIGTERM: "
          f"cleaned up as on Ctrl-C); {EXIT_BROKEN_PIPE} the reader closed the output pipe (`| head`: the "
          "command ends quietly). Errors print one message; --debug adds the traceback.")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="benchlib", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    subparsers = parser.add_subparsers(dest="command", required=True, title="commands",
                                       metavar="COMMAND")
    for command in COMMANDS:
        command.setup_arguments(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``benchlib`` console script: run the command ``argv`` names; its exit
    status (:data:`EPILOG`), benchlib's errors as one message each (their ``lead`` first)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    args = build_parser().parse_args(argv)
    from benchlib.catalog import anchor_configured

    anchor_configured()  # a relative $BENCHLIB_DB means where the command was typed
    try:
        with _sigterm_as_interrupt(), aside(args):
            return args.handler.run(args)
    except BrokenPipeError as error:  # the reader went away (`| head`): end quietly, as Unix
        if not _stdout_closed():      # tools do; a pipe of its own is a failure like any other
            return _fail(args, describe_os_error(error), EXIT_FAILURE)
        return EXIT_BROKEN_PIPE
    except BenchlibError as error:
        return _fail(args, "\n".join(filter(None, (error.lead, str(error)))), error.exit_code)
    except FileNotFoundError as error:
        return _fail(args, str(error), EXIT_BAD_INPUT)
    except OSError as error:
        return _fail(args, describe_os_error(error), EXIT_FAILURE)
    except Terminated as stop:
        return _fail(args, "terminated (SIGTERM)", stop.exit_code)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", EXIT_INTERRUPTED)
    except Exception as error:  # a bug: one line, the traceback with --debug
        return _fail(args, f"unexpected {type(error).__name__}: {error} (run again as "
                     "`benchlib --debug ...` for the traceback, and report it)", EXIT_FAILURE)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`~benchlib.errors.Terminated` (a KeyboardInterrupt) while the
    command runs, so it cleans up as on Ctrl-C (a sweep ends its point's processes and removes
    its scratch); a further SIGTERM while it does is ignored. Only in the main thread (signal
    handlers can be set nowhere else); the previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, lambda *_: None)  # let the clean-up finish
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone; if so stdout now points at /dev/null, so the
    interpreter's last flush at exit does not fail again."""
    import os
    import select

    try:
        poller = select.poll()  # a pipe whose reader has gone polls as an error
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        closed = any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False
    if closed:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return closed


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    for line in message.splitlines() or [""]:
        print(formatting.error_line(f"error: {line}"), file=sys.stderr)
    write_error(args, message, code)  # with --json, as a document too (docs/json.md)
    return code
