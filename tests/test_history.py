"""History with change points: Otava's method per configuration and node, the change with its
interval, what changed in the environment, ``benchlib history``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import campaign_history, gate, run_order, selection
from benchlib.errors import InputError
from benchlib.history import change_points as change_detection
from benchlib.history import env_changes
from benchlib.history import said as history_said
from benchlib.history import series as node_history
from tests.fakes import write_record_notebook

RUN = {"schema_version": 2, "cluster": "c", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0, "env_driver": "580.65", "env_torch": "2.14.1", "flags": ""}
START = pd.Timestamp("2026-09-01T02:00:00Z")


def _nights(nights: int = 24, step: int | None = 12, factor: float = 0.88, node: str = "node017",
            driver_at: int | None = 12, seed: int = 0, nodes: tuple[str, ...] = ("node001",
                                                                               "node017"),
            batches: tuple[int, ...] = (64,)) -> pd.DataFrame:
    """One run per night, node and batch size; on ``node`` from night ``step`` the speed is
    ``factor`` times and from ``driver_at`` the driver is 580.82. Campaign names sort the other
    way round from the nights: only started_at orders them."""
    rng = np.random.default_rng(seed)
    rows = []
    for night in range(nights):
        for host in nodes:
            for batch in batches:
                slow = host == node and step is not None and night >= step
                new = host == node and driver_at is not None and night >= driver_at
                when = START + pd.Timedelta(days=night)
                rows.append({**RUN, "host": host, "batch_size": batch,
                             "campaign": f"night-{nights - night:03d}",
                             "throughput": 1000 * (factor if slow else 1.0)
                             * float(np.exp(0.01 * rng.standard_normal())),
                             "env_driver": "580.82" if new else "580.65",
                             "env_slurm_job_id": str(1000 + night),
                             "started_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                             "run_id": f"{host}-{batch}-{night}",
                             "source": f"/n{night}/{host}-{batch}.ipynb"})
    return pd.DataFrame(rows)


def test_a_planted_step_is_found_where_it_was_planted_and_none_elsewhere() -> None:
    rng = np.random.default_rng(3)
    values = 1000 * np.exp(0.02 * rng.standard_normal(40))
    values[22:] *= 0.9
    found = change_detection.change_points(values)
    assert [p.index for p in found] == [22]
    assert found[0].pvalue < change_detection.MAX_PVALUE
    assert (found[0].start, found[0].stop) == (0, 40)
    assert change_detection.change_points(1000 * np.exp(0.02 * rng.standard_normal(40))) == []
    assert change_detection.change_points([1000.0] * 10) == []  # no noise, no step
    assert change_detection.change_points([1000.0, 900.0]) == []  # too short for two segments


def test_two_steps_are_two_change_points_each_tested_against_its_neighbours() -> None:
    rng = np.random.default_rng(5)
    values = 1000 * np.exp(0.01 * rng.standard_normal(60))
    values[20:] *= 0.85
    values[40:] *= 1.3
    found = change_detection.change_points(values)
    assert [p.index for p in found] == [20, 40]
    assert (found[0].start, found[0].stop, found[1].start, found[1].stop) == (0, 40, 20, 60)


def test_the_change_point_names_the_node_the_date_the_change_and_the_driver() -> None:
    found = node_history.change_points(_nights())
    table = found.table
    assert len(table) == 1
    row = table.iloc[0]
    assert row["node"] == "node017" and row["verdict"] == "regression"
    assert row["time"] == START + pd.Timedelta(days=12)
    assert row["ratio"] == pytest.approx(0.88, abs=0.01)
    assert row["low"] < row["ratio"] < row["high"] < 0.95
    assert row["before"] == pytest.approx(1000, rel=0.01)
    assert (row["runs_before"], row["runs_after"]) == (12, 12)
    assert row["changed"] == "driver 580.65 -> 580.82"  # job ids change every run: not said
    text = history_said.lines(found)
    assert text[0].startswith("throughput -12 % (-1")
    assert "on node017 from 2026-09-13: " in text[0]
    assert text[0].endswith("changed then: driver 580.65 -> 580.82")
    assert ("1 change point (1 regression) in 2 configuration x node histories of 24 campaigns "
            "(48 points, one per campaign in each history; 48 runs in all") in text[1]
    assert "runs ordered by started_at" in text[1]
    assert gate.exit_code("history", table["verdict"]) == 1


def test_an_improvement_is_a_change_point_but_not_a_failure() -> None:
    found = node_history.change_points(_nights(factor=1.15, driver_at=None))
    table = found.table
    assert list(table["verdict"]) == ["improvement"]
    assert table.iloc[0]["changed"] == ""
    assert "changed then: nothing recorded" in history_said.lines(found)[0]
    assert gate.exit_code("history", table["verdict"]) == 0


def test_a_change_one_run_off_is_named_with_where_it_happened() -> None:
    runs = _nights(driver_at=11)
    found = node_history.change_points(runs)
    table = found.table
    assert table.iloc[0]["changed"] == "driver 580.65 -> 580.82 (one campaign earlier)"


def test_disturbed_runs_are_left_out_and_counted() -> None:
    runs = _nights()
    slow_and_contended = (runs["host"] == "node001") & runs["run_id"].str.endswith(("-3", "-4"))
    runs.loc[slow_and_contended, "throughput"] *= 0.5
    runs.loc[slow_and_contended, "flags"] = "contended"
    runs.loc[runs.index[0], "flags"] = "noisy,throttled"
    found = node_history.change_points(runs)
    table = found.table
    assert list(table["node"]) == ["node017"]
    assert found.disturbed == 3
    assert "3 disturbed runs (contended, throttled) left out" in history_said.lines(found)[-1]


def test_a_change_point_is_one_line_whatever_the_node_is_called() -> None:
    runs = _nights(nodes=("node001", "node017\nthroughput +50 % on node001 (improvement)"),
                   node="node017\nthroughput +50 % on node001 (improvement)")
    found = node_history.change_points(runs)
    table = found.table
    said = history_said.lines(found)
    assert len(table) == 1 and len(said) == 2 and all("\n" not in line for line in said)
    assert "on node017\\nthroughput +50 % on node001 (improvement) from 2026-09-13" in said[0]


def test_each_configuration_is_its_own_history() -> None:
    found = node_history.change_points(_nights(batches=(64, 128)))
    table = found.table
    assert sorted(table["configuration"]) == ["batch_size=128", "batch_size=64"]
    assert set(table["node"]) == {"node017"}
    assert found.series == 4


def test_a_time_metric_that_grows_is_a_regression() -> None:
    runs = _nights(factor=1.0, driver_at=None)
    runs["time_iteration_s"] = 0.1
    runs.loc[(runs["host"] == "node017") & (runs["run_id"].str.split("-").str[-1].astype(int)
                                             >= 12), "time_iteration_s"] = 0.125
    runs["time_iteration_s"] *= np.exp(0.01 * np.random.default_rng(1).standard_normal(len(runs)))
    found = node_history.change_points(runs, metric="time_iteration_s")
    table = found.table
    row = table.iloc[0]
    assert row["ratio"] == pytest.approx(1.25, abs=0.02) and row["verdict"] == "regression"
    assert history_said.lines(found)[0].startswith("time_iteration_s +2")
    assert " s (regression; " in history_said.lines(found)[0]


def test_records_without_started_at_fall_back_to_file_times_and_say_so() -> None:
    runs = _nights().drop(columns=["started_at"])
    runs["timestamp"] = [START + pd.Timedelta(days=int(i.split("-")[-1])) for i in runs["run_id"]]
    assert "48 of 48 runs have no started_at" in run_order.ordered_by(runs)
    found = node_history.change_points(runs)
    table = found.table
    assert list(table["node"]) == ["node017"]
    assert "have no started_at" in found.ordered_by
    hist = campaign_history.history(_nights())  # the campaign history orders by started_at too
    assert list(hist["campaign"][:2]) == ["night-024", "night-023"]
    assert run_order.ordered_by(_nights()) == "runs ordered by started_at"


def test_env_changes_name_versions_settings_and_leave_job_ids_out() -> None:
    runs = pd.DataFrame({"env_driver": ["580.65", "580.82"], "env_os": ["Linux-6.8.0-49", "Linux-6.8.0-51"],
                         "env_var_nccl_algo": ["Ring", "Tree"], "gpu_power_limit_w": [700, 500],
                         "env_slurm_job_id": ["1", "2"], "env_host": ["a", "b"]})
    assert env_changes.between(runs, 1) == [
        "driver 580.65 -> 580.82", "kernel Linux-6.8.0-49 -> Linux-6.8.0-51",
        "NCCL_ALGO Ring -> Tree", "gpu_power_limit_w 700 -> 500"]


def test_selection_reads_and_checks_where_and_since() -> None:
    runs = _nights(batches=(64, 128))
    where = selection.parse_where(["batch_size=64", "host=node017"])
    since = selection.parse_date("2026-09-10")
    chosen = selection.select(runs, where, since)
    assert set(chosen["batch_size"]) == {64} and set(chosen["host"]) == {"node017"}
    assert len(chosen) == 24 - 9
    with pytest.raises(InputError, match=r"--where colour=red: no such key.*keys: .*batch_size"):
        selection.select(runs, {"colour": "red"})
    with pytest.raises(InputError, match=r"--where colour=red --where colour=blue: no such"):
        selection.select(runs, {"colour": ["red", "blue"]})
    with pytest.raises(InputError, match="--where gpu: give KEY=VALUE"):
        selection.parse_where(["gpu"])
    with pytest.raises(InputError, match="--since yesterday-ish: not a date; give ISO 8601"):
        selection.parse_date("yesterday-ish")


def test_the_same_where_key_twice_selects_either_value_as_results_and_compare_do() -> None:
    runs = _nights(nights=4, step=None, driver_at=None, nodes=("node001", "node002", "node017"))
    where = selection.parse_where(["host=node001", "host=node017"])
    assert where == {"host": ["node001", "node017"]}
    assert set(selection.select(runs, where)["host"]) == {"node001", "node017"}


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_campaign_copied_to_a_second_folder_counts_each_run_once(tmp_path: Path) -> None:
    runs = _nights(nights=16, step=8, driver_at=8)
    both = selection.once(pd.concat([runs, runs.assign(source="/copy" + runs["source"])]))
    assert len(both) == len(runs)
    _write_nights(tmp_path / "nightly", runs)
    _write_nights(tmp_path / "copy", runs)
    one, two = _history(tmp_path, "nightly"), _history(tmp_path, "nightly", "copy")
    assert two.returncode == one.returncode == 1 and two.stdout == one.stdout, two.stdout
    assert "32 records repeat a run already read" in two.stderr


def _write_nights(root: Path, runs: pd.DataFrame) -> None:
    for record in runs.to_dict("records"):
        night = record.pop("source").split("/")[1]
        write_record_notebook(root / night / f"{record['host']}-{record['batch_size']}.ipynb",
                              record)


def _history(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("benchlib")), "history", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MPLBACKEND": "Agg"})


def _unwrapped(out: str) -> list[str]:
    """The lines as said, before they were wrapped to the terminal (a continuation, set in,
    joined to the line it continues)."""
    lines: list[str] = []
    for line in out.strip().splitlines():
        if line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_the_command_prints_the_change_point_and_fails_on_a_regression(tmp_path: Path) -> None:
    _write_nights(tmp_path / "nightly", _nights(nights=16, step=8, driver_at=8))
    done = _history(tmp_path, "nightly", "--where", "batch_size=64")
    assert done.returncode == 1, done.stderr
    first, last = _unwrapped(done.stdout)
    assert "on node017 from 2026-09-09" in first and "driver 580.65 -> 580.82" in first
    assert "1 change point (1 regression)" in last and "runs ordered by started_at" in last
    calm = _history(tmp_path, "nightly", "--where", "host=node001")
    assert calm.returncode == 0, calm.stderr
    assert calm.stdout.startswith("0 change points")
    later = _history(tmp_path, "nightly", "--since", "2026-09-10")
    assert later.returncode == 0 and "0 change points" in later.stdout  # the step is before


def test_the_command_s_lines_fit_the_terminal(tmp_path: Path) -> None:
    """At COLUMNS=100 each line said is wrapped (222-229 characters before), continued set in;
    the page shows the same strings unwrapped."""
    _write_nights(tmp_path / "nightly", _nights(nights=16, step=8, driver_at=8))
    done = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "history", "nightly",
                           "--where", "batch_size=64"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 1, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 100, done.stdout
    first, last = _unwrapped(done.stdout)
    assert first.endswith("changed then: driver 580.65 -> 580.82"), first
    assert last.startswith("1 change point (1 regression) in 2 configuration x node histories")


@pytest.mark.parametrize(("args", "said"), [
    (("--where", "colour=red"), "--where colour=red: no such key in these records; keys: "),
    (("--since", "soon"), "--since soon: not a date; give ISO 8601"),
    (("--metric", "model"), "--metric model: a configuration column, not a measurement"),
    (("--threshold", "5"), "--threshold 5.0: give a fraction from 0 to 1"),
    (("--where", "gpu=A40"), "history: no runs under nightly match --where gpu=A40"),
])
def test_bad_input_is_exit_2_naming_the_option(tmp_path: Path, cli, args: tuple[str, ...],
                                               said: str) -> None:
    _write_nights(tmp_path / "nightly", _nights(nights=6, step=None, driver_at=None))
    code, out, err = cli(tmp_path, "history", "nightly", *args)
    assert code == 2, out
    assert said in err and "Traceback" not in err


@pytest.mark.slow  # five commands as subprocesses (12 s of the edit loop)
def test_the_command_reads_a_catalog_with_db(tmp_path: Path) -> None:
    _write_nights(tmp_path / "nightly", _nights(nights=16, step=8, driver_at=8))
    indexed = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "index",
                              "nightly", "--db", "catalog.sqlite", "--quiet"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert indexed.returncode == 0, indexed.stderr
    done = _history(tmp_path, "--db", "catalog.sqlite", "--where", "batch_size=64")
    assert done.returncode == 1, done.stderr
    assert "on node017 from 2026-09-09" in done.stdout and "driver 580.65 -> 580.82" in done.stdout
    later = _history(tmp_path, "--db", "catalog.sqlite", "--since", "2026-09-10")
    assert later.returncode == 0 and "0 change points" in later.stdout
    bad = _history(tmp_path, "--db", "catalog.sqlite", "--where", "colour=red")
    assert bad.returncode == 2 and "--where colour=red: unknown column 'colour'" in bad.stderr
    either = _history(tmp_path, "--db", "catalog.sqlite", "--where", "host=node001",
                      "--where", "host=node017")
    assert either.returncode == 1, either.stderr
    assert ("histories of 16 campaigns (32 points, one per campaign in each history; 32 runs "
            "in all") in " ".join(either.stdout.split())
    none = _history(tmp_path, "--db", "catalog.sqlite", "--where", "host=node9")
    assert none.returncode == 2 and "match --where host=node9" in none.stderr, none.stderr
    timed = _history(tmp_path, "--db", "catalog.sqlite", "--where", "since=2026-09-10")
    assert timed.returncode == 2 and "--since" in timed.stderr, timed.stderr
    assert "allowed" not in timed.stderr or ", since, until" not in timed.stderr
    both = _history(tmp_path, "nightly", "--db", "catalog.sqlite")
    assert both.returncode == 2 and "give results folders or --db, not both" in both.stderr
    configured = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "history"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "BENCHLIB_DB": "catalog.sqlite"})
    assert configured.returncode == 1 and "on node017 from 2026-09-09" in configured.stdout
    neither = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "history"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env={k: v for k, v in os.environ.items() if k != "BENCHLIB_DB"})
    assert neither.returncode == 2 and "give results folders (ROOT ...) or a catalog" in \
        neither.stderr
