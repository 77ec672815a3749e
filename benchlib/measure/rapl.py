"""CPU package energy from RAPL (Linux powercap): ``intel-rapl:N/energy_uj`` of each package.

Each package domain (``/sys/class/powercap/intel-rapl:N``, its ``name`` file ``package-N``)
counts microjoules since an arbitrary start and wraps at ``max_energy_range_uj``. The meter
reads every package at the start, at the end, and between them whenever its owner calls
:meth:`RaplMeter.poll` and :data:`READ_INTERVAL_S` seconds have passed (the timed loop calls it
after each iteration, so a long loop cannot wrap a counter twice between readings, and no
thread runs beside the loop's processes), adds each step's increase (one wrap-around undone)
and sums the packages. RAPL counts the whole package, every
process on it, not only the run's. Where no package counter is readable (no powercap, a VM, or
``energy_uj`` readable by root only since Linux 5.10) the meter measures nothing and says why:
the energy is unknown, never 0.

The root folder is :data:`ROOT`, or ``$BENCHLIB_POWERCAP_ROOT`` where set (tests use a fake tree).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/class/powercap")
ROOT_VARIABLE = "BENCHLIB_POWERCAP_ROOT"
#: Seconds between readings: far below a wrap period (about 60 s at 1 kW for a 2^32 µJ range)
READ_INTERVAL_S = 5.0
SOURCE = "rapl"


def root() -> Path:
    """The powercap folder read: ``$BENCHLIB_POWERCAP_ROOT``, else :data:`ROOT`."""
    return Path(os.environ.get(ROOT_VARIABLE) or ROOT)


@dataclass(frozen=True)
class Package:
    """One package domain: its folder and the value its counter wraps at (µJ)."""

    path: Path
    max_range_uj: int

    def read(self) -> int:
        """The counter now (µJ)."""
        return int((self.path / "energy_uj").read_text().strip())


def packages(folder: Path | None = None) -> list[Package] | str:
    """Every readable package domain under ``folder`` (default :func:`root`), or why none is."""
    folder = folder or root()
    try:
        domains = sorted(p for p in folder.iterdir() if p.name.startswith("intel-rapl:")
                         and p.name.count(":") == 1)
    except OSError as error:
        return f"no RAPL ({folder}: {error.strerror or error})"
    found = []
    for domain in domains:
        try:
            if not (domain / "name").read_text().strip().startswith("package"):
                continue
            package = Package(domain, int((domain / "max_energy_range_uj").read_text().strip()))
            package.read()
        except (OSError, ValueError) as error:
            return f"no RAPL ({domain.name}: {getattr(error, 'strerror', '') or error})"
        found.append(package)
    return found or f"no RAPL (no package domain under {folder})"


def increase(before: int, after: int, max_range_uj: int) -> int:
    """µJ between two readings of one counter, one wrap-around at ``max_range_uj`` undone."""
    return after - before if after >= before else after + max_range_uj - before


class RaplMeter:
    """Context manager: the packages' energy over the block (``energy_j``), or why not
    (``reason``). ``folder`` replaces :func:`root`; :meth:`poll` reads at most every
    ``interval_s`` seconds."""

    def __init__(self, folder: Path | None = None, interval_s: float = READ_INTERVAL_S) -> None:
        self.folder, self.interval_s = folder, interval_s
        self.energy_j: float | None = None
        self.reason = ""
        self._packages: list[Package] = []
        self._last: list[int] = []
        self._read_at = 0.0
        self._total_uj = 0
        self._failed = ""

    def read(self) -> None:
        """Add each package's increase since the last reading."""
        self._read_at = time.monotonic()
        try:
            now = [p.read() for p in self._packages]
        except (OSError, ValueError) as error:
            self._failed = f"no RAPL (a package counter stopped being readable: {error})"
            return
        self._total_uj += sum(increase(b, a, p.max_range_uj)
                              for b, a, p in zip(self._last, now, self._packages, strict=True))
        self._last = now

    def poll(self) -> None:
        """Read when ``interval_s`` has passed since the last reading (else nothing)."""
        if self._packages and time.monotonic() - self._read_at >= self.interval_s:
            self.read()

    def __enter__(self) -> RaplMeter:
        found = packages(self.folder)
        if isinstance(found, str):
            self.reason = found
            return self
        self._packages = found
        self._last = [p.read() for p in found]
        self._read_at = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._packages:
            return
        self.read()
        if self._failed:
            self.reason = self._failed
        else:
            self.energy_j = self._total_uj / 1e6
