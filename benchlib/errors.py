"""The exceptions benchlib raises on purpose, and the exit code the CLI gives each kind.

Every error a user can cause or meet derives from :class:`BenchlibError`, and every one is
defined here, whichever layer raises it; the ``benchlib`` command prints its message (one
message, no traceback unless ``--debug``; ``lead`` before it where set) and exits with its
``exit_code``: 2 for bad input (a params file, a path, an option), 1 for a failure while doing
the work (a point that could not be written, a campaign another sweep holds).
"""

from __future__ import annotations

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
#: ``check`` / ``compare``: nothing failed, but some runs cannot be certified.
EXIT_UNCERTIFIED = 3
EXIT_INTERRUPTED = 130  #: Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  #: SIGTERM (128 + SIGTERM)
EXIT_BROKEN_PIPE = 141  #: the reader closed stdout (`| head`; 128 + SIGPIPE): ends quietly


class BenchlibError(Exception):
    """Base of benchlib's own errors; ``exit_code`` is what the CLI exits with."""

    exit_code = EXIT_FAILURE
    #: What the command says before the message (none: the message alone).
    lead = ""


class InputError(BenchlibError, ValueError):
    """Bad input: the message names the file or option, the field and what is allowed."""

    exit_code = EXIT_BAD_INPUT


class OutputError(BenchlibError, OSError):
    """Results cannot be written (no space, read-only file system, a file where a folder
    should be); the message names the path and the reason."""

    exit_code = EXIT_FAILURE


class CampaignBusyError(BenchlibError):
    """Another process holds the campaign's lock; the message names it (host, pid, since)."""

    exit_code = EXIT_FAILURE


class ConfigError(InputError):
    """Invalid configuration; the message names the file, field, bad value and what is allowed."""


class ShapeError(InputError):
    """A shape the network cannot take; the message names the axis and valid sizes nearby."""


class VolumeError(InputError):
    """A volume path, format or dataset key that cannot be used; the message says what can."""


class RecordError(InputError):
    """A file that should hold a record does not hold a usable one."""


class SubmissionError(InputError):
    """sbatch refused a submission; the message is sbatch's own."""

    lead = "sbatch refused the job array; nothing was submitted:"


class RequestTooLarge(InputError):
    """Points ask for more than any node of the partition has; the message says which and how
    to fit them. Nothing was submitted."""

    lead = "no node of the partition can run these points; nothing was submitted:"


class LaunchError(BenchlibError):
    """A distributed run that failed or hung; the message names the rank and its error."""


class TimeLimitReached(BenchlibError):
    """Slurm's warning signal: the job's time limit is ``signal_delay_s`` away."""


class Preempted(BenchlibError):
    """Slurm's warning signal long before the time limit: the job is being preempted."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``kill``, a scheduler) to a ``benchlib`` command. A
    KeyboardInterrupt, so it takes Ctrl-C's path: the running point's processes are ended and
    its scratch removed; the command then exits with ``exit_code`` (128 + SIGTERM)."""

    exit_code = EXIT_TERMINATED


class ReportError(BenchlibError):
    """A summary notebook failed; the message names it and the cell's error."""

    lead = "the report stopped at a summary notebook:"


def describe_os_error(error: OSError, path: object = None) -> str:
    """``no space left on device: PATH``: the reason in lower case, then the path."""
    reason = (error.strerror or type(error).__name__).lower()
    where = path if path is not None else (error.filename or "")
    return f"{reason}: {where}" if where else reason


class CatalogError(InputError):
    """A catalog that cannot be used as given: a URL that cannot be reached (the reason, the
    password never shown), an unknown kind of database, a catalog of another schema version
    (with the command that migrates it), a selection naming an unknown column."""


class CatalogBusyError(BenchlibError):
    """Another ``benchlib index`` held the catalog's lock for longer than this one waited."""
