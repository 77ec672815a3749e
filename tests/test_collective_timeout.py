"""The process group's timeout outlasts a peer's torch.compile (issue 51, build 5): collectives
gave up after 2 x ``hang_timeout_s`` (1,200 s by default) while the launcher allows a compiled
run 3,600 s more before its first iteration, so a rank waiting in DDP's first all-reduce for a
peer still compiling was cut off before the launcher would have called it hung."""

from __future__ import annotations

import faulthandler
import json
import signal

import pytest

from benchlib.kinds.language_model.config import LanguageModelConfig
from benchlib.run import launch_worker, waiting
from benchlib.run.launch import dump_config
from benchlib.run.waiting import COMPILE_GRACE_S, allowance, collective_timeout_s


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_compiled_runs_wait_past_the_compile_allowance(mode):
    config = LanguageModelConfig(device="cpu", compile=mode, hang_timeout_s=600)
    timeout = collective_timeout_s(config)
    assert timeout >= COMPILE_GRACE_S == 3600
    assert timeout > allowance(config, 0)  # the launcher stops a hang first, and says why
    assert timeout == 600 + 60 + 3600 + 600


def test_eager_runs_keep_twice_the_hang_timeout():
    for hang in (120.0, 600.0):
        config = LanguageModelConfig(device="cpu", hang_timeout_s=hang)
        assert collective_timeout_s(config) == 2 * hang
        assert collective_timeout_s(config) > allowance(config, 1)


class Joined(Exception):
    """Raised by the stand-in process group once it has the timeout."""


def test_the_worker_joins_the_process_group_with_that_timeout(tmp_path, monkeypatch):
    from benchlib.workloads import distributed

    config = LanguageModelConfig(device="cpu", compile="default", hang_timeout_s=300)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"out": str(tmp_path), "config": dump_config(config)}))
    seen = {}

    def init(device, timeout_s):
        seen["timeout_s"] = timeout_s
        raise Joined

    monkeypatch.setattr(distributed, "init", init)
    monkeypatch.setenv("RANK", "0")
    try:
        with pytest.raises(Joined):
            launch_worker.main([str(spec)])
    finally:
        faulthandler.unregister(signal.SIGUSR1)
    assert seen["timeout_s"] == waiting.collective_timeout_s(config) == 300 + 60 + 3600 + 300
    assert (tmp_path / "error-0.txt").is_file()
