"""Fleet health over time (benchlib.fleet.health, fleet_actions, ``benchlib fleet``):
baselines from the healthy nodes, each node's state, drain lines that hostile names cannot
turn into commands, JUnit, and the command as a user meets it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import gate
from benchlib.fleet import actions as fleet_actions
from benchlib.fleet import health as fleet_health
from benchlib.vocabulary import NodeState

from .conftest import ROOT
from .fakes import write_record_notebook

NOW = pd.Timestamp("2026-11-26T06:00:00Z")
TRAIN = {"gpu": "H100", "benchmark": "train", "model": "resnet50", "batch_size": 256,
         "precision": "amp_bf16", "unit": "images/s"}
PROBE = {"gpu": "H100", "benchmark": "probe_node", "unit": "TFLOP/s"}


def nightly(nights: int = 6, nodes: int = 8, now: pd.Timestamp = NOW, seed: int = 3,
            noise: float = 0.02) -> list[dict]:
    """A fleet run every night: a training run and a node probe per node, ``noise`` spread.
    Planted: node03 at 0.85x; node04's runs throttled at 0.7x; node05's last night failed
    (its record holds only the point's parameters); node06 stopped 10 days ago; node07 never
    ran the training run."""
    rng = np.random.default_rng(seed)
    rows = []
    for night in range(nights):
        started = now - pd.Timedelta(days=nights - night, hours=-1)
        for index in range(nodes):
            node = f"node{index:02d}"
            common = {"host": node, "campaign": f"night-{night}", "status": "ok", "flags": "",
                      "started_at": started.isoformat(), "source": f"{night}/{node}"}
            if node == "node06":
                common["started_at"] = (now - pd.Timedelta(days=10 + night)).isoformat()
            if node == "node05" and night == nights - 1:
                rows.append({**common, "benchmark": "train", "model": "resnet50",
                             "batch_size": 256, "precision": "amp_bf16", "status": "failed",
                             "error": "RuntimeError: CUDA error: uncorrectable ECC error"})
            elif node != "node07":
                share = {"node03": 0.85, "node04": 0.7}.get(node, 1.0)
                rows.append({**common, **TRAIN, "throughput": 2500 * share * rng.normal(1, noise),
                             "flags": "throttled" if node == "node04" else ""})
            rows.append({**common, **PROBE, "source": f"{night}/{node}-probe",
                         "throughput": 700 * rng.normal(1, noise)})
    return rows


def _state(states: pd.DataFrame, node: str, benchmark: str = "train") -> pd.Series:
    return states[(states["node"] == node)
                  & states["configuration"].str.startswith(f"benchmark={benchmark}")].iloc[0]


def test_each_planted_node_gets_its_state_and_the_baseline_is_the_healthy_median() -> None:
    fleet = fleet_health.node_states(pd.DataFrame(nightly()), now=NOW, expected=["node99"])
    states = fleet.table
    assert _state(states, "node03")["state"] == NodeState.SLOW
    assert "0.85x the fleet, campaign by campaign" in _state(states, "node03")["reason"]
    assert _state(states, "node03")["high"] < 0.95
    throttled = _state(states, "node04")
    assert throttled["state"] == NodeState.UNKNOWN       # disturbed: never slow, named
    assert "5 of 5 recent runs throttled, left out" in throttled["reason"]
    failed = _state(states, "node05")
    assert failed["state"] == NodeState.FAILED and "uncorrectable ECC" in failed["reason"]
    assert _state(states, "node06")["state"] == NodeState.STALE
    assert _state(states, "node07")["state"] == NodeState.MISSING   # seen in the history
    assert set(states[states["node"] == "node99"]["state"]) == {NodeState.MISSING}  # listed
    for node in ("node00", "node01", "node02"):
        assert _state(states, node)["state"] == NodeState.OK
        assert set(states[states["node"] == node]["state"]) == {NodeState.OK}
    table = fleet.baselines.set_index("configuration")
    train = table.loc["benchmark=train"]
    healthy = [_state(states, n)["value"] for n in ("node00", "node01", "node02")]
    assert train["healthy_nodes"] == 3 and train["baseline"] == pytest.approx(np.median(healthy))
    assert table.loc["benchmark=probe_node", "healthy_nodes"] == 7   # all but the stale node06


def test_node_summary_takes_the_most_severe_state_and_exit_codes_follow() -> None:
    fleet = fleet_health.node_states(pd.DataFrame(nightly()), now=NOW)
    summary = fleet_actions.node_summary(fleet).set_index("node")
    assert summary.loc["node05", "state"] == NodeState.FAILED
    assert summary.loc["node05", "configurations"] == "1 failed, 1 ok"
    assert list(summary["state"])[:2] == [NodeState.FAILED, NodeState.SLOW]
    assert gate.exit_code("fleet", summary.reset_index()["state"]) == 1
    healthy = summary[summary["state"] == NodeState.OK].reset_index()
    assert gate.exit_code("fleet", healthy["state"]) == 0
    unjudged = summary[summary["state"].isin(["ok", "stale"])].reset_index()
    assert gate.exit_code("fleet", unjudged["state"]) == 3


def test_too_few_healthy_nodes_make_no_baseline_and_one_run_is_unknown() -> None:
    few = [r for r in nightly() if r["host"] in ("node00", "node01", "node03")]
    fleet = fleet_health.node_states(pd.DataFrame(few), now=NOW)
    states = fleet.table
    assert set(_state(states, n)["state"] for n in ("node00", "node03")) == {NodeState.UNKNOWN}
    assert "no baseline: 2 healthy nodes, 3 needed" in _state(states, "node03")["reason"]
    one_night = fleet_health.node_states(pd.DataFrame(nightly(nights=1)), now=NOW).table
    assert "interval unknown: 1 run(s) against 3" in _state(one_night, "node03")["reason"]


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_no_false_slow_node_in_an_a_a_fleet_of_equal_nodes() -> None:
    """40 equal nodes, 2 % noise, 20 fleets: no node is called slow (an A/A test), and one
    node at 0.85x is found in each."""
    false, found = 0, 0
    for seed in range(20):
        rows = [r for r in nightly(nights=5, nodes=40, seed=seed)
                if r["host"] not in ("node04", "node05", "node06", "node07")]
        for row in rows:
            if row["host"] == "node03" and row["benchmark"] == "train" and seed % 2:
                row["throughput"] /= 0.85                    # odd seeds: node03 healthy too
        fleet = fleet_health.node_states(pd.DataFrame(rows), now=NOW)
        states = fleet.table
        slow = set(states.loc[states["state"] == NodeState.SLOW, "node"])
        false += len(slow - {"node03"}) + (seed % 2 and "node03" in slow)
        found += (not seed % 2) and "node03" in slow
    assert false == 0 and found == 10


def test_a_failed_record_of_a_job_that_never_started_names_no_node() -> None:
    rows = nightly()
    login = {"host": "login1", "benchmark": "train", "model": "resnet50", "status": "failed",
             "error": "CANCELLED", "slurm_state": "CANCELLED", "env_slurm_job_nodelist": "",
             "started_at": NOW.isoformat()}
    died = {**login, "error": "NODE_FAIL", "slurm_state": "NODE_FAIL",
            "env_slurm_job_nodelist": "node01"}
    fleet = fleet_health.node_states(pd.DataFrame([*rows, login, died]), now=NOW)
    states = fleet.table
    assert "login1" not in set(states["node"]) and fleet.unplaced == 1
    assert _state(states, "node01")["state"] == NodeState.FAILED
    assert "NODE_FAIL" in _state(states, "node01")["reason"]


def test_a_long_node_states_table_lists_the_nodes_that_are_not_ok() -> None:
    from benchlib.fleet import tables as fleet_tables

    fleet = fleet_health.node_states(pd.DataFrame(nightly(nights=3, nodes=60)), now=NOW)
    shown = fleet_tables.states_display(fleet)
    assert list(shown.cells["node"]) == ["node05", "node03", "node06", "node07", "node04"]
    assert "60 nodes (every one: GPU H100)" in shown.caption
    assert "55 ok nodes not listed" in shown.caption
    assert "GPU" not in shown.cells          # one GPU model: said in the caption


def test_stale_follows_the_window_and_started_at_is_read_as_utc() -> None:
    rows = nightly()
    wide = fleet_health.node_states(pd.DataFrame(rows), now=NOW, window_days=30).table
    assert _state(wide, "node06")["state"] != NodeState.STALE
    later = fleet_health.node_states(pd.DataFrame(rows), now=NOW + pd.Timedelta(days=8)).table
    assert set(later["state"]) <= {NodeState.STALE, NodeState.MISSING}
    local = [{**r, "started_at": pd.Timestamp(r["started_at"]).tz_convert("Etc/GMT-5").isoformat()}
             for r in rows]                            # the same instants, written at +05:00
    again = fleet_health.node_states(pd.DataFrame(local), now=NOW).table
    assert list(again["state"]) == list(fleet_health.node_states(pd.DataFrame(rows), now=NOW).table["state"])


HOSTILE = ['node$(touch PWNED)', 'n1;touch PWNED', 'n`touch PWNED`', "n'x", 'n1\ntouch PWNED']


def test_drain_lines_never_let_record_text_run_a_command(tmp_path) -> None:
    """Each hostile node name and reason goes through the printed lines run by bash with a
    fake scontrol that records its arguments: no file is ever created, plain names drain."""
    rows = []
    for name in ["node01", *HOSTILE]:
        rows.append({"node": name, "gpu": "H100", "state": "failed", "configurations": "1 failed",
                     "reason": 'train "$(touch PWNED)" `touch PWNED`; rm -rf ~ \\ !! ${HOME}\n'
                               "touch PWNED"})
    lines = fleet_actions.drain_lines(pd.DataFrame(rows))
    assert lines[0].startswith('scontrol update nodename=node01 state=drain reason="benchlib: ')
    assert all(line.startswith("# not drained: node name") for line in lines[1:])
    assert all("\n" not in line for line in lines)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake = bin_ / "scontrol"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "$ARGS"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "ARGS": str(tmp_path / "args")}
    subprocess.run(["bash", "-c", "\n".join(lines)], cwd=tmp_path, env=env, check=True)
    assert not (tmp_path / "PWNED").exists()
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:3] == ["update", "nodename=node01", "state=drain"]
    assert args[3].startswith("reason=benchlib: failed: train ??(touch PWNED)? ?touch PWNED?; rm")
    assert len(args) == 4


def test_each_node_that_is_not_ok_is_one_line_whatever_its_name_and_reason() -> None:
    forged = 'node07\nscontrol update nodename=node01 state=drain reason="x"'
    summary = pd.DataFrame([
        {"node": forged, "state": "failed", "reason": "latest run failed: a\nb"},
        {"node": "node02", "state": "ok", "reason": ""},
        {"node": "node03", "state": "slow", "reason": "0.8x the baseline"}])
    lines = fleet_actions.problem_lines(summary)
    assert lines == ['FAILED node07\\nscontrol update nodename=node01 state=drain reason="x": '
                     "latest run failed: a\\nb", "SLOW node03: 0.8x the baseline"]


def _write_fleet(root: Path, nights: int = 4, run_ids: bool = False) -> None:
    """The nightly fleet as record notebooks, one folder per night, times relative to now
    (each run with a ``run_id`` when ``run_ids``, as benchlib writes since schema 2)."""
    now = pd.Timestamp.now(tz="UTC")
    for number, row in enumerate(nightly(nights=nights, now=now)):
        record = {"schema_version": 1, **row, **({"run_id": f"{number:032x}"} if run_ids else {})}
        record.pop("source")
        name = f"{record['benchmark']}-{record['host']}.ipynb"
        write_record_notebook(root / record["campaign"] / name, record)


def _benchlib(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([str(Path(sys.executable).with_name("benchlib")), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_copy_of_the_nights_changes_no_verdict(tmp_path) -> None:
    _write_fleet(tmp_path / "nightly", nights=3, run_ids=True)
    shutil.copytree(tmp_path / "nightly", tmp_path / "copy")
    one = _benchlib("fleet", "nightly", cwd=tmp_path)
    two = _benchlib("fleet", "nightly", "copy", cwd=tmp_path)
    assert two.returncode == one.returncode
    assert two.stdout.splitlines()[1:] == one.stdout.splitlines()[1:]  # the first: the time
    assert "records repeat a run already read" in two.stderr


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_benchlib_fleet_as_a_user_runs_it(tmp_path) -> None:
    _write_fleet(tmp_path / "outputs" / "nightly")
    done = _benchlib("fleet", "outputs/nightly", "--drain-list", "--junit", "fleet.xml",
                     "--expect", "node00,node42", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    prose = [line for line in done.stdout.splitlines() if not line.startswith("scontrol ")]
    assert max(map(len, prose)) <= 100  # fits a 100-column terminal (commands stay whole)
    out = " ".join(done.stdout.split())  # wrapped lines read as one
    assert "validity window 7 days" in out and "baselines: the median of the healthy" in out
    assert ("FAILED node05: benchmark=train: latest run failed: "
            "RuntimeError: CUDA error") in out
    assert "SLOW node03: benchmark=train: slow against the fleet: 0.8" in out
    assert "STALE node06" in out and "MISSING node07" in out and "MISSING node42" in out
    assert "UNKNOWN node04" in out and "throttled, left out" in out
    drains = [line for line in done.stdout.splitlines() if line.startswith("scontrol ")]
    assert [line.split()[2] for line in drains] == ["nodename=node05", "nodename=node03"]
    cases = ET.parse(tmp_path / "fleet.xml").getroot().find("testsuite")
    assert cases.get("failures") == "2" and int(cases.get("skipped")) >= 4
    assert _benchlib("fleet", "outputs/nightly/night-0", cwd=tmp_path).returncode in (1, 3)
    picked = _benchlib("fleet", "outputs/nightly", "--where", "benchmark=inference", cwd=tmp_path)
    assert picked.returncode == 2 and "match --where benchmark=inference" in picked.stderr
    same = _benchlib("fleet", "outputs/nightly", "--where", "benchmark=train", cwd=tmp_path)
    assert same.returncode == 1 and "SLOW node03" in " ".join(same.stdout.split())
    indexed = _benchlib("index", "outputs/nightly", "--db", "catalog.sqlite", "--quiet",
                        cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    from_db = _benchlib("fleet", "--db", "catalog.sqlite", "--expect", "node00,node42",
                        cwd=tmp_path)                    # the catalog: the same verdicts
    assert from_db.returncode == 1, from_db.stderr
    states = [line for line in done.stdout.splitlines() if line.split(" ")[0] in ("FAILED", "SLOW")]
    assert states and all(line in from_db.stdout for line in states)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCHLIB_DB": "catalog.sqlite"}
    configured = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "fleet"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert configured.returncode == 1, configured.stderr  # neither given: $BENCHLIB_DB's, as history
    assert all(line in configured.stdout for line in states)


def test_expect_takes_a_slurm_node_list_and_refuses_what_is_no_node_name() -> None:
    from benchlib.errors import InputError

    assert fleet_actions.expected_nodes(["node[001-003,010],gpu7", " n9 ", "a[8-9]x"]) == [
        "node001", "node002", "node003", "node010", "gpu7", "n9", "a8x", "a9x"]
    for bad in ("a;b", "node[1-2", "$(id)", "", " , "):
        with pytest.raises(InputError, match=r"--expect .*node\[001-004\]"):
            fleet_actions.expected_nodes([bad])
    with pytest.raises(InputError, match=r"the range 3-1 runs backwards; .* \(node\[1-3\]\)"):
        fleet_actions.expected_nodes(["node[3-1]"])


@pytest.mark.parametrize(("args", "said"), [
    ((), "fleet: give results folders (ROOT ...) or a catalog (--db DB, or $BENCHLIB_DB)"),
    (("outputs", "--window", "0"), "--window 0: give the validity window in days"),
    (("outputs", "--window", "nan"), "--window nan"),
    (("outputs", "--window", "1e9"), "at most 3,653"),
    (("missing-folder",), "missing-folder' does not exist"),
    (("outputs", "--db", "x.sqlite"), "not both"),
    (("outputs", "--junit", ""), "--junit '': an empty path"),
    (("outputs", "--expect", "a;b"), "--expect a;b: "),
])
def test_bad_input_is_exit_2_naming_the_option(tmp_path, monkeypatch, cli, args, said) -> None:
    monkeypatch.delenv("BENCHLIB_DB", raising=False)
    (tmp_path / "outputs").mkdir()
    code, _, err = cli(tmp_path, "fleet", *args)
    assert code == 2 and said in err, err
    assert "Traceback" not in err


def test_the_nightly_params_file_is_accepted_by_sweep_dry_run(tmp_path) -> None:
    done = _benchlib("sweep", str(ROOT / "params" / "fleet-nightly.yaml"), "--dry-run",
                     "--outputs", "outputs/nightly/2026-11-26", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "campaign fleet-nightly:" in done.stdout
    assert "outputs/nightly/2026-11-26/fleet-nightly" in done.stdout
    slurm = (ROOT / "docs" / "slurm.md").read_text()
    assert "params/fleet-nightly.yaml" in slurm and "scrontab" in slurm


@pytest.mark.slow
def test_the_node_states_table_reads_at_390_and_1400_px(tmp_path) -> None:
    """The acceptance page of a nightly fleet's report: the node states table with the failed
    and slow nodes first, no sideways scrolling of the page, text of 12 px or more."""
    from benchlib.report.build import build_report

    from .browser import chromium

    root = tmp_path / "nightly"
    _write_fleet(root, nights=3)
    page = build_report(root, summaries=("summary_acceptance",), progress=False).parent \
        / "summary_acceptance.html"
    for width in (390, 1400):
        with chromium(phone=390 if width == 390 else None) as driver:
            if width != 390:
                driver.set_window_size(1400, 1000)
            driver.get(page.as_uri())
            seen = driver.execute_script(
                "const t = Array.from(document.querySelectorAll('table')).find("
                "  t => t.innerText.includes('why (speed over the baseline'));"
                "const cells = t ? Array.from(t.querySelectorAll('td')) : [];"
                "return {scroll: document.scrollingElement.scrollWidth, inner: window.innerWidth,"
                "  rows: t ? Array.from(t.querySelectorAll('tbody tr')).map(r => r.innerText) : [],"
                "  smallest: Math.min(...cells.map(c => parseFloat(getComputedStyle(c).fontSize))),"
                "  narrowest: Math.min(...cells.map(c => c.getBoundingClientRect().width))};")
            assert seen["scroll"] <= seen["inner"] + 1, (width, seen["scroll"], seen["inner"])
            assert seen["smallest"] >= 12 and seen["narrowest"] >= 48, (width, seen)
            assert [r.split()[0] for r in seen["rows"][:2]] == ["node05", "node03"], seen["rows"]
            assert "⚠ failed" in seen["rows"][0] and "⚠ slow" in seen["rows"][1]


def test_a_record_dated_in_the_future_does_not_hide_a_failed_node() -> None:
    """node05's last night failed; one ok record of node05 dated 2099 (a wrong clock) is left
    out and counted, not taken as the node's latest word."""
    rows = nightly()
    assert _state(fleet_health.node_states(pd.DataFrame(rows), now=NOW).table, "node05")["state"] \
        == NodeState.FAILED
    future = {**TRAIN, "host": "node05", "campaign": "clock", "status": "ok", "flags": "",
              "started_at": "2099-01-01T00:00:00+00:00", "source": "clock/node05",
              "throughput": 2500.0}
    fleet = fleet_health.node_states(pd.DataFrame([*rows, future]), now=NOW)
    states = fleet.table
    assert _state(states, "node05")["state"] == NodeState.FAILED
    assert fleet.future == 1
