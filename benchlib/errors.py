"""The exceptions benchlib raises on purpose, and the exit code the CLI gives each kind.

Every error a user can cause or meet derives from :class:`BenchlibError`; the ``benchlib``
command prints its message (one message, no traceback unless ``--debug``) and exits with its
``exit_code``: 2 for bad input (a params file, a path, an option), 1 for a failure while doing
the work (a point that could not be written, a campaign another sweep holds).
"""

from __future__ import annotations

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


class BenchlibError(Exception):
    """Base of benchlib's own errors; ``exit_code`` is what the CLI exits with."""

    exit_code = EXIT_FAILURE


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


def describe_os_error(error: OSError, path: object = None) -> str:
    """``no space left on device: PATH``: the reason in lower case, then the path."""
    reason = (error.strerror or type(error).__name__).lower()
    where = path if path is not None else (error.filename or "")
    return f"{reason}: {where}" if where else reason
