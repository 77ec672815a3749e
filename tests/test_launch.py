"""Several processes through torchrun on the CPU (gloo): merged records, data shards, two "nodes"
on this machine, DDP gradients against one process, and ranks that crash, die or hang."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pandas as pd
import pytest
import torch

from benchlib.analysis.comparisons import allreduce_curves, distributed_runs, scaling_table
from benchlib.data.imagefolder import image_folder_loader
from benchlib.data.shard import Rank
from benchlib.errors import LaunchError
from benchlib.inputs.config import describe_validation_error
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.probes import workload_collectives as collectives
from benchlib.kinds.probes.config import AllReduceConfig
from benchlib.kinds.record import make_record
from benchlib.kinds.unet3d import workload as unet3d
from benchlib.kinds.unet3d.config import UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.kinds.unet3d.data import open_volume
from benchlib.kinds.unet3d.data_writer import write_em_volume
from benchlib.run import launch, waiting
from benchlib.run.merge import merge
from benchlib.workloads.result import RunResult

TINY_NET = {"depth": 2, "pooling": [1, 2, 2], "base_features": 4, "growth": 2, "device": "cpu",
            "num_workers": 1}
#: A launch on this machine takes ~6-10 s (torchrun, two torch imports); failures must be fast.
BOUND_S = 60


def _check_merged(result: RunResult, record: dict, world: int = 2) -> None:
    ranks = result.ranks
    assert list(ranks.index) == list(range(world))
    assert result.samples == ranks["samples"].sum() == record["samples"]
    assert result.wall_time_s == record["wall_time_s"] >= ranks["wall_time_s"].max()
    if result.started_at is not None and result.ended_at is not None:  # one span: the ranks'
        assert result.wall_time_s == pytest.approx(  # first start to last end
            max(ranks["wall_time_s"].max(), result.ended_at - result.started_at))
    assert record["throughput"] == pytest.approx(result.samples / result.wall_time_s)
    assert record["num_devices"] == world and record["dist_backend"] == "gloo"
    spread = ranks["wall_time_s"].max() / ranks["wall_time_s"].min()
    assert record["straggler_spread"] == pytest.approx(spread) and spread >= 1
    assert record["slowest_rank"] == ranks["wall_time_s"].idxmax()
    # per phase: the median over ranks of each rank's median
    assert record["time_iteration_s"] == pytest.approx(ranks["time_iteration_s"].median())
    assert record["launch_overhead_s"] > 0 and record["env_torch"] == torch.__version__


@pytest.mark.slow
def test_train_on_two_nodes_of_this_machine_through_c10d_shards_the_images(image_dir, tiny):
    """One launch (a torchrun agent per node, one rank each) checks three things: a training
    run's ranks merge into one record, the images are split over the ranks (each reads its
    own shard of the 18 images: a DistributedSampler of 9), and the nodes meet through a c10d
    rendezvous on this machine."""
    config = ClassificationConfig(benchmark="train", **{**tiny, "batch_size": 3,
                                                        "iterations": "epoch", "warmup": 0},
                                  dataset="real", data_dir=str(image_dir), num_devices=2,
                                  num_nodes=2, node_launcher="localhost")
    command = launch.torchrun_command(config, launch.Path("spec.json"), "localhost",
                                      "127.0.0.1:29999", "abc")
    assert "--nnodes=2" in command and "--rdzv-backend=c10d" in command
    assert "--rdzv-endpoint=127.0.0.1:29999" in command and "--nproc-per-node=1" in command
    result = launch.run(config)
    record = make_record(config, result)
    _check_merged(result, record)
    assert record["num_nodes"] == 2 and record["node_launcher"] == "localhost"
    assert result.ranks["node"].tolist() == [0, 1]
    # weak scaling: batch 3 per device; each rank ran its 9 images once (3 iterations)
    assert result.samples == 18 and result.ranks["samples"].tolist() == [9, 9]
    assert result.ranks["iterations"].tolist() == [3, 3]
    assert (record["global_batch_size"], record["device_batch_size"]) == (6, 3)
    assert set(result.per_iteration.columns) >= {"iteration", "forward", "backward", "optimizer"}


@pytest.mark.slow
def test_smooth_inference_splits_the_images_over_ranks(image_dir, tiny):
    config = ClassificationConfig(benchmark="smooth_inference", **{**tiny, "iterations": "epoch",
                                                                   "warmup": 0},
                                  dataset="real", data_dir=str(image_dir), num_devices=2,
                                  noise_samples=4)
    result = launch.run(config)
    _check_merged(result, make_record(config, result))
    assert result.samples == 18  # every image once: no rank repeats another's inputs
    assert result.ranks["samples"].tolist() == [9, 9]


def test_image_shards_are_disjoint_and_complete(image_dir):
    seen = {}
    for train in (False, True):
        for rank in range(2):
            shard = Rank(rank=rank, world_size=2)
            loader = image_folder_loader(image_dir, 32, 4, 0, train=train, pin_memory=False,
                                         shard=shard)
            indices = list(loader.sampler) if train else loader.dataset.indices
            seen[train, rank] = set(indices)
    assert seen[False, 0] | seen[False, 1] == set(range(18)) and not seen[False, 0] & seen[False, 1]
    assert not seen[True, 0] & seen[True, 1] and len(seen[True, 0]) == len(seen[True, 1]) == 9


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    path = tmp_path_factory.mktemp("em") / "em.h5"
    write_em_volume(path, (23, 52, 52), cell=(4, 12, 12), chunks=(4, 16, 16), progress=False)
    return path


@pytest.mark.slow
def test_unet_prediction_on_two_ranks_equals_one_process(volume, tmp_path):
    values = {"volume": str(volume), "block_shape": [10, 20, 20], "batch_size": 2,
              "output_dtype": "float32", **TINY_NET}
    one = UNet3DPredictConfig(**values, output=str(tmp_path / "one.zarr"))
    two = UNet3DPredictConfig(**values, output=str(tmp_path / "two.zarr"), num_devices=2)
    unet3d.predict(one)
    result = launch.run(two)
    _check_merged(result, make_record(two, result))
    assert result.samples == result.extras["voxels_written"] == 23 * 52 * 52
    assert result.extras["blocks"] == 27 and result.ranks["iterations"].tolist() == [7, 7]
    with open_volume(one.output, one.output_key) as a, open_volume(two.output, two.output_key) as b:
        single, split = a[:], b[:]
    assert not np.isnan(split).any()  # NaN-poisoned at creation: every voxel was written
    np.testing.assert_allclose(split, single, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_unet_training_with_ddp_on_two_ranks(tmp_path):
    config = UNet3DTrainConfig(**TINY_NET, patch_shape=[21, 44, 44], iterations=2, warmup=1,
                               num_devices=2)
    result = launch.run(config)
    _check_merged(result, make_record(config, result))
    assert result.samples == 2 * 2 * math.prod(config.output_shape)


@pytest.mark.slow
def test_ddp_gradients_equal_one_process_on_the_global_batch():
    config = ClassificationConfig(device="cpu", num_classes=10)
    single = launch.run(config, target="tests.dist_targets:one_train_step")
    double = launch.run(config.model_copy(update={"num_devices": 2}),
                        target="tests.dist_targets:one_train_step")
    assert (single.ddp, double.ddp) == ("Sequential", "DistributedDataParallel")
    for a, b in zip(single.parameters, double.parameters, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    before = [p.detach() for p in __import__("tests.dist_targets").dist_targets.tiny_net().parameters()]
    assert any((a - b).abs().max() > 1e-4 for a, b in zip(single.parameters, before, strict=True))


def _fails(target: str, **extra) -> tuple[str, float]:
    config = ClassificationConfig(device="cpu", num_devices=2, **extra)
    start = time.monotonic()
    with pytest.raises(LaunchError) as error:
        launch.run(config, target=f"tests.dist_targets:{target}")
    return str(error.value), time.monotonic() - start


@pytest.mark.slow
def test_a_killed_rank_ends_the_launch_with_its_name():
    message, seconds = _fails("killed")
    assert message.startswith("rank 1 of 2") and "SIGKILL" in message
    assert seconds < BOUND_S


#: The end of torchrun's log when rank 1 was killed and torchrun then stopped rank 0.
TORCHRUN_SUMMARY = """benchlib.run.launch_worker FAILED
-------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-22_13:47:51
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 11653)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 11653
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_13:47:51
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 11654)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 11654
"""


def test_the_root_cause_is_named_not_the_ranks_torchrun_stopped_after_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHLIB_LAUNCH_DIR", str(tmp_path))
    job = launch.Launch(ClassificationConfig(device="cpu", num_devices=2))
    (job.out / "agent-0.log").write_text(TORCHRUN_SUMMARY)
    job.logs = [job.out / "agent-0.log"]
    assert job._failure().startswith("rank 1 of 2 (host localhost) was killed by signal 9 "
                                     "(SIGKILL)")


@pytest.mark.slow
def test_a_crashed_rank_is_named_with_its_error():
    message, seconds = _fails("crash")
    assert message.startswith("rank 1 of 2 failed: ValueError: injected failure on rank 1")
    assert seconds < BOUND_S


@pytest.mark.slow
def test_a_hung_rank_is_stopped_after_the_hang_timeout_leaving_no_work_folder(tmp_path,
                                                                              monkeypatch):
    import tempfile

    from benchlib.workloads.scratch import marked

    monkeypatch.delenv("BENCHLIB_SCRATCH", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the work folder goes
    message, seconds = _fails("hang", hang_timeout_s=4)
    assert "finished no iteration for 4 s" in message
    assert "rank 1: 1 iterations; in <lambda> (" in message and "dist_targets.py" in message
    assert 4 < seconds < BOUND_S
    assert not list(tmp_path.glob("benchlib-launch-*"))  # the failed launch's work folder
    assert marked(tmp_path) == []  # and no rank left running


@pytest.mark.slow
def test_allreduce_probe_on_two_ranks():
    config = AllReduceConfig(device="cpu", min_bytes=1024, max_bytes=64 * 1024, iterations=3,
                             warmup=1)
    result = launch.run(config)
    table = result.table
    assert table["size"].tolist() == ["1KiB", "2KiB", "4KiB", "8KiB", "16KiB", "32KiB", "64KiB"]
    np.testing.assert_allclose(table["algbw_GBps"], table["size_bytes"] / table["time_us"] / 1e3)
    np.testing.assert_allclose(table["busbw_GBps"], table["algbw_GBps"])  # 2(n-1)/n = 1 for n=2
    record = make_record(config, result)
    plateau = table.sort_values("size_bytes")["busbw_GBps"].tail(4).median()  # the 4 largest
    assert record["throughput"] == plateau and record["num_devices"] == 2
    curves = allreduce_curves(pd.DataFrame([record]))
    assert curves["size_bytes"].tolist() == table["size_bytes"].tolist()


def test_bus_bandwidth_factor_follows_nccl_tests():
    assert [collectives.bus_factor(n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]
    assert [collectives.size_label(s) for s in (1024, 3 << 20, 1 << 30, 1500)] == \
        ["1KiB", "3MiB", "1GiB", "1500B"]


def _fake(rank: int, wall: float, iteration: list[float], samples: int) -> dict:
    frame = pd.DataFrame({"iteration": iteration, "forward": [t / 2 for t in iteration]})
    result = RunResult(device=torch.device("cpu"), iterations=len(iteration), warmup=1,
                       samples=samples, wall_time_s=wall, unit="images/s", per_iteration=frame,
                       extras={"blocks": 3, "final_loss": float(rank)})
    return {"rank": rank, "node": 0, "host": "h", "result": result, "env": {"env_x": rank}}


def test_merge_takes_all_samples_over_the_slowest_rank():
    merged = merge([_fake(1, 4.0, [1.0, 3.0], 20), _fake(0, 2.0, [2.0, 1.0], 10)],
                   summed=("blocks",))  # the kind's summed extras (U-Net prediction's blocks)
    assert (merged.samples, merged.wall_time_s, merged.throughput) == (30, 4.0, 7.5)
    assert merged.per_iteration["iteration"].tolist() == [1.5, 2.0]  # median over ranks
    stats = merged.stats()  # phases: median over ranks of each rank's median
    assert (stats["iteration"].median, stats["forward"].median) == (1.75, 0.875)
    assert merged.extras["blocks"] == 6 and merged.extras["final_loss"] == 0.0  # rank 0's
    assert merged.extras["straggler_spread"] == 2.0 and merged.extras["slowest_rank"] == 1
    assert merged.env == {"env_x": 0} and merged.num_devices == 2


def test_merge_times_staggered_ranks_as_one_span():
    """Ranks that started their loops apart: all samples over first start to last end, not
    over the slowest rank's own wall time (which overstated the throughput)."""
    early, late = _fake(0, 2.0, [1.0, 1.0], 10), _fake(1, 2.0, [1.0, 1.0], 10)
    early["result"].started_at, early["result"].ended_at = 100.0, 102.0
    late["result"].started_at, late["result"].ended_at = 101.5, 103.5
    merged = merge([early, late])
    assert merged.wall_time_s == 3.5 and merged.throughput == pytest.approx(20 / 3.5)


def test_every_rank_waits_for_the_others_after_warm_up(monkeypatch):
    from tests.fakes import loop_calls

    assert loop_calls(monkeypatch, 1, 1, barrier=True) == ["warm-up", "reset", "barrier", "timed"]


def test_scaling_tables_read_merged_records():
    rows = [{"benchmark": "train", "model": "resnet18", "batch_size": 4, "scaling": "weak",
             "num_devices": n, "num_nodes": 1, "global_batch_size": 4 * n, "throughput": t,
             "straggler_spread": s, "status": "ok", "dist_backend": "gloo" if n > 1 else None}
            for n, t, s in ((1, 100.0, None), (2, 150.0, 1.1))]
    frame = pd.DataFrame(rows)
    table = scaling_table(frame, value="efficiency")
    assert table.loc[2, "median"] == pytest.approx(0.75)
    assert distributed_runs(frame)["straggler_spread"].tolist() == [1.1]


def _errors(config_class, **values) -> list[str]:
    try:
        config_class(**values)
    except Exception as error:
        return describe_validation_error(error, fields=config_class.model_fields)
    return []


def test_bad_distributed_parameters_are_named(volume, tmp_path):
    assert _errors(ClassificationConfig, num_devices=3, num_nodes=2) == [
        "num_devices: num_devices 3 does not split evenly over num_nodes 2 (each node runs "
        "num_devices / num_nodes processes); e.g. 2, 4, 6, 8"]
    assert _errors(ClassificationConfig, num_devices=4, batch_size=30, scaling="strong") == [
        "batch_size: batch_size 30 (the global batch in strong scaling) does not split over "
        "num_devices 4; e.g. 28 or 32"]
    assert _errors(ClassificationConfig, benchmark="smooth_inference", scaling="strong")[0] \
        .startswith("scaling: scaling 'strong' does not apply to smooth_inference")
    assert _errors(AllReduceConfig, num_devices=1)[0].startswith("num_devices: num_devices 1")
    assert _errors(ClassificationConfig, node_launcher="ssh")[0].startswith(
        "node_launcher: bad value 'ssh'")
    hdf5 = _errors(UNet3DPredictConfig, volume=str(volume), block_shape=[10, 20, 20],
                   output=str(tmp_path / "p.h5"), num_devices=2, **TINY_NET)
    assert hdf5[0].startswith("output: output ") and "give a .zarr output" in hdf5[0]
    strong = ClassificationConfig(batch_size=64, num_devices=4, scaling="strong")
    assert (strong.device_batch_size, strong.global_batch_size) == (16, 64)


def test_several_nodes_outside_slurm_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the srun work folder goes under the working directory
    for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        monkeypatch.delenv(name, raising=False)
    config = ClassificationConfig(num_devices=4, num_nodes=2)
    with pytest.raises(LaunchError, match="not a SLURM allocation of 2 nodes"):
        launch.node_launcher(config)
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    monkeypatch.setattr(launch, "_first_slurm_host", lambda: "node001")
    assert launch.node_launcher(config) == "srun"
    job = launch.Launch(config)
    (command,) = job.commands()
    assert command[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                           "--kill-on-bad-exit=1"]
    assert "--nproc-per-node=2" in command and any(a.startswith("--rdzv-endpoint=node001:")
                                                   for a in command)


@pytest.mark.slow
def test_sweep_over_devices_gives_scaling_and_a_failed_launch_record(tmp_path, tiny, monkeypatch):
    import yaml

    from benchlib.cli import main
    from benchlib.execute import executor
    from benchlib.records.results import load

    # the sweep refuses CUDA points here before running any (test_docs_run); this launch is to
    # run and fail, so the refusal is left out
    monkeypatch.setattr(executor, "refuse_cuda_without_a_gpu", lambda *_: None)

    spec = {"campaign": "scale", "notebook": "train", "base": {**tiny, "device": "cpu"},
            "grid": {"num_devices": [1, 2]}}
    (tmp_path / "scale.yaml").write_text(yaml.safe_dump(spec))
    # a launch whose ranks fail: they are asked for CUDA on a machine without it
    broken = {**spec, "base": {**tiny, "device": "cuda"}, "grid": {"num_devices": [2]}}
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(broken))
    outputs = tmp_path / "out"
    assert main(["sweep", str(tmp_path / "scale.yaml"), "--outputs", str(outputs), "--quiet"]) == 0
    assert main(["sweep", str(tmp_path / "broken.yaml"), "--outputs", str(outputs), "--quiet"]) == 0
    frame = load(outputs / "scale")
    done = frame[frame["status"] == "ok"].set_index("num_devices")
    assert done.loc[2, "samples"] == 2 * done.loc[1, "samples"]  # weak scaling
    assert done.loc[2, "dist_backend"] == "gloo" and done.loc[2, "straggler_spread"] >= 1
    assert list(scaling_table(done.reset_index()).index) == [1, 2]
    (failed,) = frame[frame["status"] == "failed"].itertuples()
    assert "LaunchError: rank " in failed.error and " of 2 failed" in failed.error


def test_every_registered_config_survives_the_launch_spec():
    from benchlib import registry
    from benchlib.run.launch import dump_config, load_config

    for entry in registry.shipped():
        assert registry.config_class(entry.config.__name__) is entry.config
        if entry.config.__name__.startswith("UNet3D"):
            continue  # validating these opens their volume (the unet3d launch tests cover them)
        config = entry.config(batch_size=3) if "batch_size" in entry.config.model_fields \
            else entry.config(iterations=3)
        loaded = load_config(json.loads(json.dumps(dump_config(config))))
        assert loaded == config and type(loaded) is entry.config
    with pytest.raises(KeyError, match="not a registered config"):
        load_config({"class": "Popen", "params": {}})


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_an_agent_gets_sigterm_when_its_launcher_dies(tmp_path):
    """torchrun runs in a session of its own (the kernel's time limit kills only the kernel's
    process group): on Linux it is started so that the kernel's death stops it."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    pid_file = tmp_path / "agent.pid"
    parent = ("import subprocess, sys, time\n"
              "from benchlib.run.launch import with_death_signal\n"
              "agent = subprocess.Popen(with_death_signal(['sleep', '300']), "
              "start_new_session=True)\n"
              f"open({str(pid_file)!r}, 'w').write(str(agent.pid))\n"
              "time.sleep(300)\n")
    process = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.monotonic() + 60
    while not pid_file.is_file() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    agent = int(pid_file.read_text())
    time.sleep(1)  # the guard has execed sleep
    process.kill()
    process.wait()
    import psutil

    try:
        psutil.Process(agent).wait(timeout=20)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        psutil.Process(agent).kill()
        pytest.fail("the agent outlived its launcher")


def test_a_compiled_models_first_iteration_is_not_a_hang():
    """torch.compile's max-autotune can take tens of minutes before the first iteration: the
    launcher gives that first iteration an hour more, and none after it."""
    from types import SimpleNamespace

    plain = SimpleNamespace(hang_timeout_s=600.0, compile="none")
    compiled = SimpleNamespace(hang_timeout_s=600.0, compile="max-autotune")
    assert launch.allowance(plain, 0) == 600 + waiting.STARTUP_GRACE_S
    assert launch.allowance(compiled, 0) >= 600 + waiting.STARTUP_GRACE_S + 1800
    assert launch.allowance(compiled, 1) == launch.allowance(plain, 1) == 600
