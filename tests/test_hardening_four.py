"""The fourth hardening round (issue 43): each case a hostile or careless user met, refused
with a message naming the field and what is allowed, never an "unexpected" error."""

from __future__ import annotations

import pytest

from benchlib.cli import main


@pytest.mark.parametrize("budget", ["inf", "1e308"])
def test_diagnose_refuses_a_budget_that_is_not_a_time(budget, tmp_path, capsys):
    status = main(["diagnose", "--budget", budget, "--outputs", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and "budget" in err and "unexpected" not in err


def test_fleet_refuses_a_node_list_without_bound(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    status = main(["fleet", str(tmp_path / "empty"), "--expect", "node[1-99999999]"])
    err = capsys.readouterr().err
    assert status == 2 and "more than 100,000 node names" in err


def test_a_password_with_an_unencoded_at_never_shows(tmp_path, capsys):
    status = main(["results", "--db", "postgresql+psycopg://benchlib_test:Bw2x@Zq9k@127.0.0.1/db"])
    err = capsys.readouterr().err
    assert status == 2 and "%40" in err
    assert "Bw2x" not in err and "Zq9k" not in err


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_catalog_is_refused(url, capsys):
    status = main(["results", "--db", url])
    err = capsys.readouterr().err
    assert status == 2 and "in-memory" in err


def test_energy_efficiency_zero_is_unknown_and_a_huge_one_stays_short():
    import pandas as pd

    from benchlib import formatting
    from benchlib.analysis import energy

    rows = pd.DataFrame({"benchmark": ["train"] * 3, "unit": ["images/s"] * 3,
                         "samples_per_joule": [0.0, 1e308, 4.2], "samples": [10] * 3,
                         "energy_j": [float("nan")] * 3})
    seen = energy.with_per_joule(rows)[energy.COLUMN]
    assert pd.isna(seen.iloc[0]) and seen.iloc[2] == 4.2
    assert energy.said(seen.iloc[0], "images/J") == "unknown"
    assert formatting.number(1e308) == "1e+308" and len(energy.said(seen.iloc[1], "images/J")) < 20


@pytest.mark.slow  # starts a kernel
def test_a_kernel_never_imports_python_from_its_campaign_folder(tmp_path):
    """`benchlib report` starts its kernels in the campaign folder, which is shared and copied
    between people: a pandas.py there is not imported in place of pandas."""
    import nbformat

    from benchlib.execute.notebook_run import NotebookSession

    folder = tmp_path / "campaign"
    folder.mkdir()
    marker = tmp_path / "stranger-ran"
    (folder / "pandas.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import pandas")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    source = tmp_path / "n.ipynb"
    nbformat.write(notebook, str(source))
    with NotebookSession(folder) as session:
        session.execute(source, tmp_path / "out.ipynb", {})
    assert not marker.exists()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("memory_bytes", 1 << 50, "the copy holds two buffers of it"),
    ("transfer_bytes", 1 << 50, "more than half of this node's"),
    ("allreduce_devices", 100_000, "allreduce_devices 100000: more than this node's"),
])
def test_the_node_probe_s_sizes_are_refused_before_it_runs(field, value, said, tmp_path):
    """`sweep --dry-run` refuses what the node cannot hold (1 PiB buffers, 100,000 processes
    on 2 cores) instead of the point failing after minutes."""
    import json

    from benchlib.errors import ConfigError
    from benchlib.inputs.params import load_sweep

    params = tmp_path / "p.yaml"
    params.write_text(json.dumps({"campaign": "c", "notebook": "node_probe",
                                  "base": {"device": "cpu", field: value}}))
    with pytest.raises(ConfigError, match=said):
        load_sweep(str(params), base_dir=tmp_path)
