"""Counting the device synchronisations a timed loop makes without meaning to.

``torch.cuda.set_sync_debug_mode("warn")`` makes PyTorch warn at every operation that blocks
the host on the device (``.item()``, a device-to-host copy, a copy from pageable memory,
``nonzero``, a size read back as ``bincount`` does); the timers' own reads (CUDA events,
``torch.cuda.synchronize``) are not among them. :class:`SyncWatch` turns the mode on over the
timed steps, records the warnings and counts them: a loop that keeps the device busy counts 0.
Nothing is watched on a CPU or when not asked: :attr:`SyncWatch.count` is then None.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

#: What PyTorch's sync-debug warnings start with (c10/cuda/CUDAFunctions.cpp)
SYNC_WARNING = "called a synchronizing CUDA operation"


class SyncWatch:
    """A context manager over the timed steps: with ``enabled`` on a CUDA ``device``, the
    synchronising operations run inside it are counted (:attr:`count`) and the first few
    described (:attr:`examples`); :meth:`paused` leaves out a deliberate read (a time budget's
    check)."""

    def __init__(self, device: torch.device, enabled: bool) -> None:
        self.active = enabled and device.type == "cuda"
        self.count: int | None = 0 if self.active else None
        self.examples: list[str] = []
        self._caught: list[warnings.WarningMessage] = []
        self._catcher: contextlib.AbstractContextManager | None = None

    def _mode(self, mode: str) -> None:
        import torch

        torch.cuda.set_sync_debug_mode(mode)

    def __enter__(self) -> SyncWatch:
        if self.active:
            self._catcher = warnings.catch_warnings(record=True)
            self._caught = self._catcher.__enter__()
            warnings.simplefilter("always")
            self._mode("warn")
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.active or self._catcher is None:
            return
        self._mode("default")
        caught = list(self._caught)
        self._catcher.__exit__(*exc)
        syncs = [w for w in caught if SYNC_WARNING in str(w.message)]
        for other in caught:  # whatever else warned still reaches the user
            if other not in syncs:
                warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
        self.count = len(syncs)
        self.examples = sorted({f"{w.filename}:{w.lineno}" for w in syncs})[:5]

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """A stretch inside the watch whose synchronisations are meant (not counted)."""
        if not self.active:
            yield
            return
        self._mode("default")
        try:
            yield
        finally:
            self._mode("warn")
