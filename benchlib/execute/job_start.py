"""The first Python a SLURM job of a sweep runs: Slurm's warning held until the point can act.

The batch script is ``exec python -u -m benchlib.execute.job_start -u -m submitit.core._submit
FOLDER``. Slurm may send its time-limit warning (``USR2``) up to a minute before it is due (the
resolution of its event handling), so with a short time limit at once, while Python, submitit
and the pickled point are still loading; USR2's default action would then kill the job with no
reason recorded. This module blocks USR2 first, then runs the module named after ``-m``.
:func:`benchlib.execute.slurm_sweep.run_point_job` unblocks it once its handler is set: a warning
that came in the meantime is delivered then, and the point is recorded as stopped by it.
"""

from __future__ import annotations

import runpy
import signal
import sys

#: Blocked from the job's start until the point's handler is set.
HELD_SIGNALS = frozenset({signal.SIGUSR2})


def main(argv: list[str]) -> None:
    """Block :data:`HELD_SIGNALS`, then run ``[-u] -m MODULE ARGS...`` as Python would."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    args = argv[1:] if argv[:1] == ["-u"] else list(argv)  # -u: this interpreter has it already
    if len(args) < 2 or args[0] != "-m":
        raise SystemExit(f"usage: python -m {__name__} [-u] -m MODULE [ARGS...]; got {argv}")
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
