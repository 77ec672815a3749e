"""Fleet checks: robust z-scores and outliers, the node table and heat map (500 generated
nodes), and fleet runs pinned one job per node on the local Slurm (``executor.nodes``)."""

from __future__ import annotations

import subprocess
import time
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import comparisons
from benchlib.cli import main
from benchlib.errors import InputError
from benchlib.execute import slurm
from benchlib.fleet import outliers as fleet
from benchlib.inputs.executors import SlurmExecutor
from benchlib.records.results import load
from tests.test_slurm import SLURM, _params, _partition_up, local_slurm  # noqa: F401

matplotlib.use("Agg")

SLOW = {"node017": 0.55, "node242": 0.70, "node480": 0.80}  # planted: share of normal speed


def _fleet(count: int = 500) -> pd.DataFrame:
    """One node probe and one training run per node; 2 % noise; SLOW nodes slowed in matmul
    and training; node100 has a slow memory only; half the nodes are A100s running at 0.4x."""
    rng = np.random.default_rng(7)
    rows = []
    for index in range(count):
        host = f"node{index:03d}"
        gpu, scale = ("H100", 1.0) if index % 2 else ("A100", 0.4)
        slow = SLOW.get(host, 1.0)
        noise = lambda: rng.normal(1.0, 0.02)  # noqa: E731
        common = {"host": host, "gpu": gpu, "status": "ok", "flags": ""}
        rows.append({**common, "benchmark": "probe_node", "throughput": 700 * scale * slow,
                     "matmul_tflops_fp16": 700 * scale * slow * noise(),
                     "matmul_tflops_fp32": 50 * scale * noise(),
                     "memory_GBps": 2800 * scale * noise() * (0.6 if host == "node100" else 1.0),
                     "h2d_pinned_GBps": 50 * noise()})
        rows.append({**common, "benchmark": "train", "throughput": 2500 * scale * slow * noise(),
                     "flags": "throttled" if host == "node242" else ""})
    return pd.DataFrame(rows)


def test_robust_z_and_outliers_find_the_planted_nodes() -> None:
    frame = _fleet()
    train = frame[frame["benchmark"] == "train"]
    marked = comparisons.outliers(train, "throughput", by=["gpu"])
    assert set(marked.loc[marked["outlier"], "host"]) == set(SLOW)
    assert (marked.loc[marked["outlier"], "robust_z"] < -3.5).all()
    # one group for both GPU models: every A100 would be 'slow', and the planted ones hidden
    pooled = comparisons.outliers(train, "throughput", by=None)
    assert set(pooled.loc[pooled["outlier"], "host"]) != set(SLOW)


def test_robust_z_with_most_values_equal_and_with_all_equal() -> None:
    values = pd.Series([100.0] * 9 + [50.0])
    z = fleet.robust_z(values)
    assert z.iloc[-1] < -3.5 and (z.iloc[:9] == 0).all()  # MAD 0: mean deviation stands in
    assert (fleet.robust_z(pd.Series([5.0, 5.0, 5.0])) == 0).all()


def test_node_table_sorts_slowest_first_with_relative_speed_and_flags() -> None:
    table = fleet.node_table(_fleet()[lambda f: f["benchmark"] == "train"])
    assert len(table) == 500 and list(table.columns[:2]) == ["gpu", "host"]
    firsts = table.groupby("gpu").head(2)
    h100 = table[table["gpu"] == "H100"]
    assert h100["host"].iloc[0] == "node017" and h100["relative"].iloc[0] == pytest.approx(0.55, abs=0.03)
    assert table.set_index("host").loc["node242", "flags"] == "throttled"
    assert firsts["outlier"].sum() >= 2


def test_heatmap_of_500_nodes_normalised_to_the_fleet_median() -> None:
    frame = _fleet()
    probes = frame[frame["benchmark"] == "probe_node"]
    h100 = probes[probes["gpu"] == "H100"]
    relative = fleet.normalised(h100)
    assert list(relative.columns) == ["matmul_tflops_fp32", "matmul_tflops_fp16", "memory_GBps",
                                      "h2d_pinned_GBps"]
    assert relative.index[0] == "node017"                      # slowest first
    assert relative.median().to_numpy() == pytest.approx(1.0, abs=0.01)
    figure = fleet.heatmap(h100)
    title = figure.axes[0].get_title()
    assert "250 nodes relative to the fleet median" in title and "1 outlier node ⚠" in title
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert 0 < len(labels) < 250                               # thinned to stay readable
    small = [t.get_text() for t in fleet.heatmap(h100.head(10)).axes[0].get_yticklabels()]
    assert len(small) == 10 and small[0] == "node017 ⚠" and "⚠" not in "".join(small[1:])


def test_nodes_option_validates() -> None:
    for value in ("all", ["a", "b"], 3, None):
        assert SlurmExecutor(nodes=value).nodes == value
    for value in (0, "some", [1]):
        with pytest.raises(ValueError, match="nodes"):
            SlurmExecutor(nodes=value)


def test_fleet_nodes_from_sinfo_and_points_pinned_to_them(monkeypatch) -> None:
    listing = {False: "g1|gpu\ng1|gpu\ng2|gpu\ng3|gpu\n", True: "g2|gpu\ng3|gpu\n"}
    asked = []

    def sinfo(command):
        asked.append(command)
        return subprocess.CompletedProcess(command, 0, listing["idle" in command], "")

    monkeypatch.setattr(slurm, "_run", sinfo)
    executor = SlurmExecutor(partition="gpu", nodes="all")
    assert slurm.fleet_nodes(executor) == ["g1", "g2", "g3"]
    assert asked[-1][:6] == ["sinfo", "-h", "-N", "-o", "%N|%P", "-p"]
    assert slurm.fleet_nodes(executor.model_copy(update={"nodes": 2})) == ["g2", "g3"]
    assert slurm.fleet_nodes(executor.model_copy(update={"nodes": ["g3", "g1"]})) == ["g3", "g1"]
    with pytest.raises(InputError, match="g9 not in partition gpu"):
        slurm.fleet_nodes(executor.model_copy(update={"nodes": ["g9"]}))
    with pytest.raises(InputError, match="3 idle nodes asked, partition gpu has 2 idle"):
        slurm.fleet_nodes(executor.model_copy(update={"nodes": 3}))

    from benchlib.execute.slurm_sweep import _requests, pin_to_nodes
    from benchlib.inputs.params import Point

    points = [Point("train", {"batch_size": b}, 0, f"train-{b}") for b in (2, 4)]
    monkeypatch.setattr(slurm, "partition_has_gpus", lambda partition: True)
    pinned_points, pinned = pin_to_nodes(points, executor)
    assert [p.label for p in points] == ["train-2", "train-4"]  # the sweep's own points stay
    assert [p.label.split("-on-")[1] for p in pinned_points] == ["g1", "g2", "g3"] * 2
    assert len({p.name for p in pinned_points}) == 6 and set(pinned.values()) == {"g1", "g2", "g3"}
    sweep = SimpleNamespace(campaign="f", points=pinned_points)
    requests = _requests(sweep, executor, pinned_points, pinned)
    assert [r["additional_parameters"]["nodelist"] for r in requests.values()] == ["g1", "g2", "g3"] * 2
    with pytest.raises(InputError, match="one node"):
        pin_to_nodes([Point("train", {"num_nodes": 2}, 0, "train-n2")], executor)


def _nodes(partition: str, idle: bool = False) -> list[str]:
    command = ["sinfo", "-h", "-N", "-p", partition, "-o", "%N"] + (["-t", "idle"] if idle else [])
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return list(dict.fromkeys(out.stdout.split()))


FLEET_PROBE = {"precisions": ["fp32"], "matmul_size": 256, "memory_bytes": 1 << 20,
               "transfer_bytes": 1 << 20, "iterations": 2, "warmup": 1,
               "decode_workers": [0], "allreduce_devices": 1}


@pytest.mark.slow
@pytest.mark.xdist_group("slurm_multi")
def test_fleet_run_pins_one_job_to_each_node(local_slurm, tmp_path, capsys,  # noqa: F811
                                             monkeypatch) -> None:
    if not _partition_up("multi"):
        pytest.skip("partition 'multi' (two emulated nodes from tools/local-slurm) is not up")
    monkeypatch.chdir(tmp_path)
    nodes = _nodes("multi")
    params = _params(tmp_path, "fleet", {**SLURM, "partition": "multi", "nodes": "all"},
                     base={"batch_size": 2})
    text = params.read_text().replace("notebook: train", "notebook: [train, {node_probe: "
                                      + str(FLEET_PROBE).replace("'", "") + "}]")
    params.write_text(text)
    out = tmp_path / "out"
    assert main(["sweep", str(params), "--outputs", str(out), "--wait", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"submitted {2 * len(nodes)} of {2 * len(nodes)} points" in printed
    frame = load(out / "fleet")
    assert list(frame["status"]) == ["ok"] * 2 * len(nodes)
    per_node = frame.groupby("env_slurm_job_nodelist")["benchmark"].agg(sorted)
    assert per_node.to_dict() == {n: ["probe_node", "train"] for n in nodes}
    assert fleet.node_column(frame) == "env_slurm_job_nodelist"
    table = fleet.node_table(frame[frame["benchmark"] == "train"])
    assert sorted(table["env_slurm_job_nodelist"]) == sorted(nodes)
    figure = fleet.heatmap(frame[frame["benchmark"] == "probe_node"])
    assert f"{len(nodes)} nodes" in figure.axes[0].get_title()
    # a resubmit finds every pinned point done
    assert main(["sweep", str(params), "--outputs", str(out)]) == 0
    assert f"left alone: {2 * len(nodes)} done" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.xdist_group("slurm_multi")
def test_fleet_run_on_a_list_or_the_first_idle_nodes(local_slurm, tmp_path, capsys,  # noqa: F811
                                                     monkeypatch) -> None:
    if not _partition_up("multi"):
        pytest.skip("partition 'multi' (two emulated nodes from tools/local-slurm) is not up")
    monkeypatch.chdir(tmp_path)
    last = _nodes("multi")[-1]
    out = tmp_path / "out"
    # which nodes a list or a count chooses, read from the real sinfo (that Slurm runs each
    # pinned job on its node is test_fleet_run_pins_one_job_to_each_node's real run)
    listed = SlurmExecutor(**{**SLURM, "partition": "multi", "nodes": [last]})
    assert slurm.fleet_nodes(listed) == [last]
    # the nodes may still be completing the previous test's jobs: wait for one to be idle
    # (the choice of the *first* idle nodes is test_fleet_nodes_from_sinfo_...'s fake sinfo)
    first = SlurmExecutor(**{**SLURM, "partition": "multi", "nodes": 1})
    deadline = time.monotonic() + 60
    while True:
        try:
            chosen = slurm.fleet_nodes(first)
            break
        except InputError as error:
            assert "1 idle nodes asked, partition multi has 0 idle now" in str(error)
            if time.monotonic() > deadline:
                pytest.skip("no node of partition 'multi' became idle within 60 s")
            time.sleep(1)
    assert len(chosen) == 1 and chosen[0] in _nodes("multi")
    capsys.readouterr()
    wrong = _params(tmp_path, "wrong", {**SLURM, "partition": "multi", "nodes": ["nosuchnode"]})
    assert main(["sweep", str(wrong), "--outputs", str(out)]) == 2
    assert "executor.nodes: nosuchnode not in partition multi" in capsys.readouterr().err
    many = _params(tmp_path, "many", {**SLURM, "partition": "multi", "nodes": 99})
    with pytest.raises(InputError, match="99 idle nodes asked"):
        slurm.fleet_nodes(SlurmExecutor(**{**SLURM, "partition": "multi", "nodes": 99}))
    assert main(["sweep", str(many), "--outputs", str(out)]) == 2


def test_a_heatmap_column_of_record_text_is_never_mathtext() -> None:
    """A workload named ``$\\frac{1}{$`` (record text) is a heat-map column: seaborn draws the
    figure while it lays out the labels, so the name is escaped before it gets there (found by
    tests/test_summary_properties.py's Hypothesis search)."""
    wide = pd.DataFrame({"host": [f"n{i}" for i in range(4)], "$\\frac{1}{$": [1.0, 2.0, 3.0, 4.0],
                         "status": "ok"})
    figure = fleet.heatmap(wide, ["$\\frac{1}{$"], node="host")
    figure.canvas.draw()
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ["\\$\\frac{1}{\\$"]
