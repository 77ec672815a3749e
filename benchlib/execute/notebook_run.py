"""The one papermill runner of benchlib: benchmark points (the sweep) execute through
:func:`execute_notebook`, each in a kernel of its own; a report's summary notebooks through a
:class:`NotebookSession`, several one after another in one kernel.

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

#: Python and IPython leave the kernel's working folder off the import path (``sys.flags
#: .safe_path``): a session's kernel works in a campaign folder (a report's summaries), which is
#: shared and copied between people, and a ``pandas.py`` there must not be imported in place of
#: pandas. (A sweep's points work in the folder the sweep was started from, the user's own.)
SAFE_PATH = {"PYTHONSAFEPATH": "1"}


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


class SessionKernelManager(LocalKernelManager):
    """A kernel that outlives its clients (:class:`NotebookSession`): the clients each notebook's
    run opens are kept, so their channels are closed when that notebook is done (nbclient
    leaves the client of a kernel it does not own open)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clients: list[Any] = []

    def client(self, **kwargs: Any) -> Any:
        made = super().client(**kwargs)
        self.clients.append(made)
        return made

    def close_clients(self) -> None:
        """Stop the channels of every client opened so far."""
        while self.clients:
            made = self.clients.pop()
            if made.channels_running:
                made.stop_channels()


def _manager_class(env: Mapping[str, str] | None,
                   base: type[LocalKernelManager] = LocalKernelManager) -> type[LocalKernelManager]:
    """``base``, with ``env`` added to its kernels' environment."""
    if not env:
        return base
    return type("KernelManager", (base,), {"extra_env": dict(env)})


def execute_notebook(source: Path, target: Path, parameters: Mapping[str, object],
                     kernel_dir: Path, timeout_s: int | None = None,
                     env: Mapping[str, str] | None = None) -> None:
    """Execute ``source`` with ``parameters`` into ``target`` in a kernel of its own, working
    in ``kernel_dir`` with ``env`` added to its environment. Raises papermill's errors
    (``PapermillExecutionError`` for a failed cell)."""
    import papermill

    papermill.execute_notebook(
        str(Path(source).absolute()), str(Path(target).absolute()),
        parameters=dict(parameters), progress_bar=False, log_output=False,
        execution_timeout=timeout_s, kernel_manager_class=_manager_class(env),
        resources={"metadata": {"path": str(Path(kernel_dir).absolute())}},
    )


#: Run in the session's kernel after each notebook: the next one starts with no figures open, every
#: warning shown again (leaving ``catch_warnings`` marks the filters changed, which empties each
#: module's record of warnings already shown), an empty namespace and a new history session, its
#: cells numbered from 1 (its modules stay imported: that is the saving).
RESET = """\
import sys as _sys
import warnings as _warnings
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
with _warnings.catch_warnings():
    pass
_warnings.onceregistry.clear()
get_ipython().reset(new_session=True)
"""


class NotebookSession:
    """Notebooks executed one after another in one kernel working in ``kernel_dir`` (a report's
    summary pages): the kernel's start and its imports are paid once, not once per notebook.

    Each notebook starts from an empty namespace (:data:`RESET`); one that fails or is
    interrupted takes its kernel with it, and the next notebook gets a fresh one. Use it as a
    context manager (the kernel is shut down at the end), from one thread."""

    def __init__(self, kernel_dir: Path, env: Mapping[str, str] | None = None) -> None:
        self.kernel_dir = Path(kernel_dir).absolute()
        self._manager_class = _manager_class({**(env or {}), **SAFE_PATH}, SessionKernelManager)
        self._manager: SessionKernelManager | None = None
        self.kernels_started = 0  #: how many kernels this session has started

    def __enter__(self) -> NotebookSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def execute(self, source: Path, target: Path, parameters: Mapping[str, object]) -> None:
        """Execute ``source`` with ``parameters`` into ``target`` in the session's kernel
        (started for the notebook's kernel name when none runs). Raises papermill's errors."""
        import papermill

        source = Path(source).absolute()
        manager = self._kernel(_kernel_name(source))
        try:
            papermill.execute_notebook(
                str(source), str(Path(target).absolute()), parameters=dict(parameters),
                progress_bar=False, log_output=False, km=manager,
                kernel_name=manager.kernel_name)
            self._reset(manager)
        except BaseException:
            manager.close_clients()
            self.close()  # a kernel in an unknown state is never handed to the next notebook
            raise

    def close(self) -> None:
        """Shut the kernel down (nothing when none runs)."""
        from jupyter_core.utils import run_sync

        manager, self._manager = self._manager, None
        if manager is not None:
            manager.close_clients()
            if manager.has_kernel:
                run_sync(manager.shutdown_kernel)()

    def _kernel(self, name: str) -> SessionKernelManager:
        from jupyter_core.utils import run_sync

        if self._manager is not None and self._manager.kernel_name != name:
            self.close()
        if self._manager is None:
            manager = self._manager_class(kernel_name=name)
            run_sync(manager.start_kernel)(cwd=str(self.kernel_dir))
            self._manager, self.kernels_started = manager, self.kernels_started + 1
        return self._manager

    @staticmethod
    def _reset(manager: SessionKernelManager) -> None:
        import nbformat
        from nbclient import NotebookClient

        cell = nbformat.v4.new_code_cell(RESET)
        client = NotebookClient(nbformat.v4.new_notebook(cells=[cell]), km=manager)
        with client.setup_kernel():
            client.execute_cell(cell, 0, store_history=False)  # leaves the count at 1
        manager.close_clients()
        if cell.outputs:
            raise RuntimeError(f"resetting the kernel between notebooks said: {cell.outputs}")


def _kernel_name(source: Path) -> str:
    """The kernel ``source`` names in its metadata (papermill's own choice)."""
    import nbformat

    nb = nbformat.read(source, as_version=4)
    return nb.metadata.get("kernelspec", {}).get("name") or "python3"
