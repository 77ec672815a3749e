"""The one papermill runner of benchlib: benchmark points (the sweep) and summary notebooks (the
report) both execute through :func:`execute_notebook`.

It never changes the working directory of the process: papermill's ``cwd`` option does
(``os.chdir`` for the whole run), which breaks every relative path used by another thread at
the same time. Instead the paths given to papermill are absolute and the *kernel* is started in
``kernel_dir`` (nbclient's ``resources['metadata']['path']``), so the notebook sees the folder
it should and the calling process keeps its own.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager


class LocalKernelManager(AsyncKernelManager):
    """Kernels talk over Unix sockets in the temp folder: no TCP ports, no unencrypted-TCP
    warning from ipykernel, nothing left in the working directory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.ip = str(Path(tempfile.gettempdir()) / f"benchlib-kernel-{uuid.uuid4().hex[:12]}")


def execute_notebook(source: Path, target: Path, parameters: Mapping[str, object],
                     kernel_dir: Path, timeout_s: int | None = None) -> None:
    """Execute ``source`` with ``parameters`` into ``target``, the kernel working in
    ``kernel_dir``. Raises papermill's errors (``PapermillExecutionError`` for a failed cell)."""
    import papermill

    papermill.execute_notebook(
        str(Path(source).absolute()), str(Path(target).absolute()),
        parameters=dict(parameters), progress_bar=False, log_output=False,
        execution_timeout=timeout_s, kernel_manager_class=LocalKernelManager,
        resources={"metadata": {"path": str(Path(kernel_dir).absolute())}},
    )
