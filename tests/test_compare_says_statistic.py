"""benchlib compare says which statistic its base and new columns are: the report's pages show
the median of the same runs (a campaign of runs at 10.2 and 26.3 images/s read 16.3 in compare
and 18.2 on the index, neither named)."""

from __future__ import annotations

from benchlib.cli import main
from tests.fakes import write_record_notebook


def _campaign(root, name: str, speeds: list[float]) -> None:
    for i, speed in enumerate(speeds):
        write_record_notebook(root / name / f"train-r{i}.ipynb", {
            "schema_version": 1, "campaign": name, "benchmark": "train", "model": "resnet18",
            "dataset": "synthetic", "precision": "fp32", "num_devices": 1, "batch_size": 8,
            "unit": "images/s", "status": "ok", "error": "", "throughput": speed,
            "samples": 100, "energy_j": 100 / speed * 30, "energy_source": "rapl",
            "samples_per_joule": speed / 30})


def test_compare_names_the_geometric_mean_of_speed_and_energy(tmp_path, capsys) -> None:
    _campaign(tmp_path, "base", [10.2, 26.3])
    _campaign(tmp_path, "new", [20.4, 27.8])
    main(["compare", str(tmp_path / "base"), str(tmp_path / "new")])
    said = " ".join(capsys.readouterr().out.split())  # wrapped to the terminal's width
    assert said.count("base, new: geometric mean of each side's runs") == 2, said
