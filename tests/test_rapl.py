"""RAPL package energy on a fake powercap tree: packages summed, wrap-arounds undone (polled), an
unreadable counter or a missing tree giving no energy (unknown), and a CPU run's record."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.measure import rapl
from benchlib.measure.rapl import RaplMeter, increase, packages

MAX = 1_000_000


def domain(root: Path, name: str, label: str, energy: int, max_range: int = MAX) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(f"{label}\n")
    (folder / "energy_uj").write_text(f"{energy}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_range}\n")
    return folder


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two packages, a core subdomain and an mmio duplicate (neither counted)."""
    domain(tmp_path, "intel-rapl:0", "package-0", 100)
    domain(tmp_path, "intel-rapl:1", "package-1", 900_000)
    domain(tmp_path, "intel-rapl:0:0", "core", 5)
    domain(tmp_path, "intel-rapl-mmio:0", "package-0", 7)
    domain(tmp_path, "intel-rapl:2", "psys", 11)
    return tmp_path


def set_energy(root: Path, name: str, energy: int) -> None:
    (root / name / "energy_uj").write_text(f"{energy}\n")


def test_only_package_domains_are_read(tree: Path) -> None:
    found = packages(tree)
    assert [p.path.name for p in found] == ["intel-rapl:0", "intel-rapl:1"]  # type: ignore[union-attr]


def test_the_packages_are_summed_and_a_wrap_around_undone(tree: Path) -> None:
    with RaplMeter(tree, interval_s=60) as meter:
        set_energy(tree, "intel-rapl:0", 2_000_100)   # +2 J
        set_energy(tree, "intel-rapl:1", 400_000)     # wrapped at 1 J: +0.5 J
    assert meter.energy_j == pytest.approx(2.5)
    assert increase(900_000, 400_000, MAX) == 500_000


def test_polled_readings_catch_more_than_one_wrap_and_keep_the_interval(tmp_path: Path) -> None:
    domain(tmp_path, "intel-rapl:0", "package-0", 0)
    with RaplMeter(tmp_path, interval_s=0) as meter:
        for energy in (600_000, 200_000, 800_000):  # 0.6 J, wrap +0.6 J, +0.6 J
            set_energy(tmp_path, "intel-rapl:0", energy)
            meter.poll()  # what the timed loop does after each iteration
    assert meter.energy_j == pytest.approx(1.8)
    with RaplMeter(tmp_path, interval_s=60) as slow:
        set_energy(tmp_path, "intel-rapl:0", 900_000)
        slow.poll()  # too soon: not read (a read would have made the end reading a wrap)
        set_energy(tmp_path, "intel-rapl:0", 850_000)
    assert slow.energy_j == pytest.approx(0.05)  # 800,000 -> 850,000 only


def test_nothing_readable_leaves_the_energy_unknown_and_says_why(tmp_path: Path) -> None:
    with RaplMeter(tmp_path / "missing") as meter:
        pass
    assert meter.energy_j is None and meter.reason.startswith("no RAPL (")
    folder = domain(tmp_path, "intel-rapl:0", "package-0", 1)
    (folder / "energy_uj").unlink()
    (folder / "energy_uj").mkdir()  # unreadable whoever reads it (mode 0400 is read by root)
    with RaplMeter(tmp_path) as unreadable:
        pass
    assert unreadable.energy_j is None and "intel-rapl:0" in unreadable.reason


def test_a_counter_that_breaks_mid_run_gives_no_energy(tree: Path) -> None:
    with RaplMeter(tree, interval_s=60) as meter:
        set_energy(tree, "intel-rapl:0", 5)
        (tree / "intel-rapl:0" / "energy_uj").write_text("garbage\n")
    assert meter.energy_j is None and "stopped being readable" in meter.reason


def test_the_root_comes_from_the_environment(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rapl.ROOT_VARIABLE, str(tree))
    assert rapl.root() == tree
    monkeypatch.delenv(rapl.ROOT_VARIABLE)
    assert rapl.root() == rapl.ROOT


def test_a_cpu_run_records_package_energy_or_unknown(tiny: dict, tree: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.kinds.record import make_record
    from benchlib.run.launch import run

    config = ClassificationConfig(benchmark="inference", **tiny)
    monkeypatch.setenv(rapl.ROOT_VARIABLE, str(tree / "missing"))
    unknown = make_record(config, run(config))
    assert unknown["energy_j"] is None and unknown["samples_per_joule"] is None
    assert unknown["energy_source"].startswith("none: no RAPL")

    class Advancing(RaplMeter):  # the fake counters move by 3 J over the loop
        def __exit__(self, *exc: object) -> None:
            set_energy(tree, "intel-rapl:0", 3_000_100)
            super().__exit__(*exc)

    monkeypatch.setenv(rapl.ROOT_VARIABLE, str(tree))
    monkeypatch.setattr("benchlib.workloads.loop.RaplMeter", Advancing)
    record = make_record(config, run(config))
    assert record["energy_source"] == "rapl" and record["energy_j"] == pytest.approx(3.0)
    assert record["samples_per_joule"] == pytest.approx(record["samples"] / 3.0)
