"""The one papermill runner of benchlib: benchmark points (the sweep) and summary notebooks (the
report) both execute through :func:`execute_notebook`.

It never changes the working directory of the process: papermill's ``cwd`` option does
(``os.chdir`` for the whole run), which breaks every relative path used by another thread at
the same time. Instead the paths given to papermill are absolute and the *kernel* is started in
``kernel_dir`` (nbclient's ``resources['metadata']['path']``), so the notebook sees the folder
it should and the calling process keeps its own.

Papermill's local file handler also ``os.chdir``s around every read and write, into a folder it
keeps in one process-wide attribute that concurrent runs overwrite and restore out of order (a
report's summaries run in threads): a thread could move the whole process into another test's
or user's folder. :class:`AbsoluteLocalHandler` reads and writes without ``chdir``; it is
registered for papermill's ``local`` scheme once, when this module is imported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from papermill.iorw import LocalHandler, papermill_io

from benchlib.records.hand_run import RUNNER_ENV


class LocalKernelManager(AsyncKernelManager):
    """Kernels talk over Unix sockets in the temp folder: no TCP ports, no unencrypted-TCP
    warning from ipykernel, nothing left in the working directory.

    A kernel is shut down without the SIGINT that jupyter_client sends first: papermill's last
    request (``kernel_info``) returns before the kernel leaves its handler, so the signal often
    landed there and ipykernel printed ``KeyboardInterrupt caught in kernel.`` to the sweep's
    stderr after a normal run. A kernel still busy (a cell that timed out) gets the shutdown
    request, then SIGTERM and SIGKILL to its process group (``shutdown_wait_time``); whatever a
    kernel that exited left running in its process group gets SIGTERM.
    """

    extra_env: Mapping[str, str] = {}  #: added to the kernel's environment (:func:`execute_notebook`)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.ip = str(Path(tempfile.gettempdir()) / f"benchlib-kernel-{uuid.uuid4().hex[:12]}")

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        """The kernel's environment is this process's plus :data:`RUNNER_ENV` (the runner saves
        each point's record, so the notebook does not save its own) and :attr:`extra_env`;
        this process's own environment is left as it is."""
        kw["env"] = {**kw.get("env", os.environ), RUNNER_ENV: "1", **self.extra_env}
        return await super()._async_pre_start_kernel(**kw)

    async def _async_interrupt_kernel(self) -> None:
        """Interrupt, except as the first step of a shutdown (``interrupt_kernel``, which
        nbclient and users call, is jupyter_client's own and unaffected)."""
        if not self.shutting_down:
            await super()._async_interrupt_kernel()

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        """jupyter_client's shutdown (without its SIGINT), then SIGTERM to the processes the
        kernel left in its process group."""
        pgid = getattr(self.provisioner, "pgid", None)
        await super()._async_shutdown_kernel(now=now, restart=restart)
        if pgid and not restart:
            with contextlib.suppress(OSError):  # nothing left: the group is gone
                os.killpg(pgid, signal.SIGTERM)


class AbsoluteLocalHandler(LocalHandler):
    """Papermill's local file handler without ``os.chdir``: paths are taken as given (relative
    ones from the working directory, which nothing changes), and ``cwd`` is ignored."""

    def read(self, path: str) -> str:
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as error:
            import json

            try:  # papermill also accepts a notebook's JSON text in place of a path
                json.loads(path)
            except ValueError:
                raise error from None
            return path

    def listdir(self, path: str) -> list[str]:
        return [os.path.join(path, name) for name in os.listdir(path)]

    def write(self, buf: str, path: str) -> None:
        folder = os.path.dirname(path)
        if folder and not os.path.exists(folder):
            raise FileNotFoundError(f"output folder {folder} doesn't exist.")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(buf)

    def cwd(self, new_path: str | None) -> None:
        return None


def _use_absolute_local_handler() -> None:
    """Make :class:`AbsoluteLocalHandler` papermill's one ``local`` handler. Papermill picks the
    last ``local`` entry of its handler list for plain paths but the first for the ``cwd``
    bookkeeping, so the stock entry is replaced in place rather than shadowed."""
    handlers = getattr(papermill_io, "_handlers", None)
    if isinstance(handlers, list):
        handlers[:] = [(scheme, found) for scheme, found in handlers if scheme != "local"]
    papermill_io.register("local", AbsoluteLocalHandler())


_use_absolute_local_handler()


def execute_notebook(source: Path, target: Path, parameters: Mapping[str, object],
                     kernel_dir: Path, timeout_s: int | None = None,
                     env: Mapping[str, str] | None = None) -> None:
    """Execute ``source`` with ``parameters`` into ``target``, the kernel working in
    ``kernel_dir`` with ``env`` added to its environment. Raises papermill's errors
    (``PapermillExecutionError`` for a failed cell)."""
    import papermill

    manager = LocalKernelManager
    if env:
        manager = type("KernelManager", (LocalKernelManager,), {"extra_env": dict(env)})
    papermill.execute_notebook(
        str(Path(source).absolute()), str(Path(target).absolute()),
        parameters=dict(parameters), progress_bar=False, log_output=False,
        execution_timeout=timeout_s, kernel_manager_class=manager,
        resources={"metadata": {"path": str(Path(kernel_dir).absolute())}},
    )
