"""``benchlib calibrate`` (an A/A calibration into the catalog) and ``benchlib compare`` reading
each configuration's noise between campaigns from it, as a user types them (a subprocess, from
the folder the paths are relative to)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
PARAMS = """campaign: aa
notebook: [inference]
base: {model: resnet18, image_size: 32, num_classes: 10, batch_size: 4, dataset: synthetic,
       iterations: 5, warmup: 1, device: cpu}
repeats: 2
"""


def _benchlib(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "BENCHLIB_DB"}
    return subprocess.run([BENCHLIB, *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.parametrize("rounds", ["2", "51", "x"])
def test_rounds_out_of_range_is_bad_input_naming_the_option(tmp_path: Path, cli,
                                                           rounds: str) -> None:
    (tmp_path / "aa.yaml").write_text(PARAMS)
    code, _, err = cli(tmp_path, "calibrate", "aa.yaml", "--rounds", rounds, "--db", "cat.sqlite")
    assert code == 2 and "--rounds" in err
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "cat.sqlite").exists()


@pytest.mark.slow
def test_calibrate_then_compare_reads_the_noise_between_campaigns(tmp_path: Path) -> None:
    (tmp_path / "aa.yaml").write_text(PARAMS)
    done = _benchlib(tmp_path, "calibrate", "aa.yaml", "--rounds", "4", "--db", "cat.sqlite",
                     "--quiet")
    calibrated = "NOTHING CALIBRATED" not in done.stdout  # every configuration disturbed: 3
    assert done.returncode == (0 if calibrated else 3), done.stdout + done.stderr
    assert "8 records written" in done.stdout
    first, *_, last = sorted(p.name for p in (tmp_path / "outputs").iterdir())
    known = _benchlib(tmp_path, "compare", f"outputs/{first}", f"outputs/{last}", "--db",
                      "cat.sqlite")
    said, read = (" ".join(out.stdout.split()) for out in (done, known))  # wrapped lines as one
    if "contended or throttled, left out" in said:  # a busy machine (the suite beside)
        # the campaigns left with an undisturbed run (2 to 4), or too few for a noise
        assert ("too few campaigns with an undisturbed speed" in said
                or re.search(r"over [234] campaigns; one campaign against another: \+-", said))
    else:  # a quiet one: the noise, and compare reads it from the catalog
        assert "over 4 campaigns; one campaign against another: +-" in said
        assert "between-campaign noise" in read and "from 3 other campaigns" in read
    alone = _benchlib(tmp_path, "compare", f"outputs/{first}", f"outputs/{last}")
    assert "one campaign each: the noise between campaigns is unknown" in " ".join(
        alone.stdout.split())


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_an_unusable_catalog_or_outputs_stop_it_before_any_round(tmp_path: Path) -> None:
    (tmp_path / "aa.yaml").write_text(PARAMS)
    (tmp_path / "garbage.sqlite").write_text("not a database")
    (tmp_path / "afile").write_text("")
    bad_db = _benchlib(tmp_path, "calibrate", "aa.yaml", "--rounds", "3", "--db",
                       "garbage.sqlite")
    assert bad_db.returncode == 2 and "garbage.sqlite" in bad_db.stderr
    bad_outputs = _benchlib(tmp_path, "calibrate", "aa.yaml", "--rounds", "3", "--outputs",
                            "afile", "--db", "cat.sqlite")
    assert bad_outputs.returncode == 2 and "--outputs afile" in bad_outputs.stderr
    assert "round 1" not in bad_db.stdout + bad_outputs.stdout
    assert not (tmp_path / "outputs").exists()
