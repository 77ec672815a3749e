"""A run's scratch folder, and the processes marked with it.

A sweep gives each point a scratch folder under the campaign (``.partial/<point>.XXXXXXXX/``)
and names it in the kernel's environment (:data:`SCRATCH_VARIABLE`); the launcher's work folder
and the 3D U-Net's temporary predictions go there, and every process the point starts (the
kernel, torchrun, its ranks and their workers) inherits the variable. Outside a sweep the
scratch root is the system's temporary folder (``$TMPDIR``, else ``/tmp``).

:func:`end_processes` ends every process whose :data:`SCRATCH_VARIABLE` lies in a folder: the
point's end, its time limit, Ctrl-C and the next sweep (after a killed one) call it before the
folder is removed, so nothing a point started outlives it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from pathlib import Path

SCRATCH_VARIABLE = "BENCHLIB_SCRATCH"  #: the scratch folder of the run a process belongs to
GRACE_S = 5.0  #: how long processes get after SIGTERM before SIGKILL


def scratch_root() -> Path:
    """Where this run's scratch files go: :data:`SCRATCH_VARIABLE` (made if missing), else the
    system's temporary folder."""
    given = os.environ.get(SCRATCH_VARIABLE)
    if not given:
        return Path(tempfile.gettempdir())
    Path(given).mkdir(parents=True, exist_ok=True)
    return Path(given)


def _inside(value: str | None, folder: str) -> bool:
    return bool(value) and (value == folder or value.startswith(folder + os.sep))


def marked(folder: Path) -> list:
    """This user's processes (``psutil.Process``) whose :data:`SCRATCH_VARIABLE` is ``folder``
    or lies under it; never this process nor its parents."""
    import psutil

    root, found = str(Path(folder).absolute()), []
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    for process in psutil.process_iter():
        if process.pid in mine:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if _inside(process.environ().get(SCRATCH_VARIABLE), root):
                found.append(process)
    return found


def end_processes(folder: Path, grace_s: float = GRACE_S) -> int:
    """End every process :func:`marked` with ``folder``: SIGTERM (to its process group when it
    leads one: torchrun, srun and each rank start their own), then SIGKILL to those left after
    ``grace_s``. Returns how many there were."""
    import psutil

    processes = marked(folder)
    count = len(processes)
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        for process in processes:
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, sig)
                else:
                    process.send_signal(sig)
        processes = psutil.wait_procs(processes, timeout=wait)[1]
        if not processes:
            break
    return count
