"""Secrets by shape as well as by name: never in records, run pages, notebooks or CSV exports."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.record import make_record
from benchlib.measure.environment import allowed_environment, container_image
from benchlib.measure.redact import redact
from benchlib.publish.pages import present
from benchlib.run import launch

from .conftest import ROOT, TINY
from .fakes import write_record_notebook

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretPEMbody0123456789\n"
       "c2VjcmV0UEVNYm9keQ==\n-----END RSA PRIVATE KEY-----")
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzZWNyZXRKV1QifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
#: (value, the secret part that must not survive, id): each a value's shape, not its name
SHAPES = [
    (PEM, "secretPEMbody", "pem"),
    (f"key={PEM.replace(chr(10), '|')} rest", "secretPEMbody", "pem-on-one-line"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEsecretSSH", "secretSSH", "pem-cut"),
    ("ghp_secretGH0123456789abcdefABCDEF0123", "secretGH", "github-ghp"),
    ("x gho_secretGHO123456789abcdefABCDEF012 y", "secretGHO", "github-gho"),
    ("github_pat_11ABCDEFG0_secretPAT0123456789abcdefghijklmnop", "secretPAT", "github-pat"),
    ("xoxb-123456789012-secretSLACK0123456789", "secretSLACK", "slack-bot"),
    ("xoxp-1-secretSLACKp-2", "secretSLACKp", "slack-user"),
    (JWT, "c2VjcmV0SldU", "jwt"),
    ("--password hunter2secret --verbose", "hunter2secret", "option-space"),
    ("--token=secretTOK9 -v", "secretTOK9", "option-equals"),
    ("--db-pass s3cretPASS", "s3cretPASS", "option-pass"),
    ("alice:s3cretUSERPW@login.example.org", "s3cretUSERPW", "userinfo-no-scheme"),
    ("sync to bob:p@ss:wordSECRET@10.0.0.5:/data", "wordSECRET", "userinfo-at-in-password"),
    ("https://carol:p@ssSECRETurl@host.example.org/x", "ssSECRETurl", "url-at-in-password"),
    ("NCCL_FOO_PW=secretPWinvalue", "secretPWinvalue", "pw-pair"),
]
#: values that are not secrets and must stay as they are
PLAIN = ("mlx5_0:1,mlx5_1:1", "ib0", "^docker0,lo", "/sw/containers/pytorch_24.05.sif",
         "password reset", "docker://registry.example.org/ml/pytorch:24.05", "0,1,2,3",
         "user@host", "eyJ-not-a-jwt", "-----BEGIN CERTIFICATE-----",
         "nvcr.io/nvidia/pytorch@sha256:0123abcd", "Linux-6.5.0-x86_64-with-glibc2.35")


@pytest.mark.parametrize(("value", "secret"), [(v, s) for v, s, _ in SHAPES],
                         ids=[i for _, _, i in SHAPES])
def test_secret_shaped_values_are_masked_wherever_the_environment_is_read(value: str,
                                                                          secret: str) -> None:
    for masked in (redact(value), allowed_environment({"NCCL_NET_PLUGIN": value})
                   ["env_var_nccl_net_plugin"],
                   container_image({"APPTAINER_CONTAINER": value}, root=Path("/nonexistent"))):
        assert secret not in masked and "***" in masked


@pytest.mark.parametrize("value", PLAIN)
def test_plain_values_are_kept(value: str) -> None:
    assert redact(value) == value


@pytest.mark.parametrize("name", ["NCCL_IB_PW", "UCX_PSK", "FI_CXI_JWT", "NCCL_PASS",
                                  "NCCL_PASSWD", "UCX_SECRET", "NCCL_TOKEN", "UCX_KEY",
                                  "FI_CREDENTIAL", "FI_CREDENTIALS", "NCCL_PW_FILE",
                                  "nccl_ib_pw"])
def test_secret_names_are_never_copied(name: str) -> None:
    environ = {name: "harmless-looking", "NCCL_DEBUG": "INFO"}
    assert allowed_environment(environ) == {"env_var_nccl_debug": "INFO"}


@pytest.mark.parametrize("name", ["NCCL_PWR_LIMIT", "UCX_SPWN", "NCCL_IB_GID_INDEX"])
def test_names_that_only_contain_the_letters_are_copied(name: str) -> None:
    assert allowed_environment({name: "3"}) == {f"env_var_{name.lower()}": "3"}


def test_a_secret_by_shape_reaches_no_output(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """Through the real path: the launcher's capture, the record, the run page's environment
    tables, a notebook holding the record, and ``benchlib results --csv``."""
    secrets = {"NCCL_NET_PLUGIN": PEM, "NCCL_SOCKET_IFNAME": "ghp_secretGH0123456789abcdefABCDEF01",
               "UCX_NET_DEVICES": f"mlx5_0:1 {JWT}", "FI_PROVIDER": "--password hunter2secret",
               "NCCL_IB_HCA": "alice:s3cretUSERPW@login", "NCCL_IB_PW": "s3cretNAMEPW",
               "BENCHLIB_CONTAINER_IMAGE": "xoxb-123456789012-secretSLACK0123456789"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    leaks = ("secretPEMbody", "secretGH", "c2VjcmV0SldU", "hunter2secret", "s3cretUSERPW",
             "s3cretNAMEPW", "secretSLACK")
    config = ClassificationConfig(**{**TINY, "iterations": 1, "warmup": 0}, campaign="leak")
    result = launch.run(config)
    record = make_record(config, result)
    assert record["env_var_nccl_net_plugin"] == "***"  # the variable is kept, its value masked
    page = present.environment_tables(result.env)._repr_html_()
    notebook = write_record_notebook(tmp_path / "c" / "run.ipynb", record)
    exported = tmp_path / "records.csv"
    done = subprocess.run([str(ROOT / ".venv/bin/benchlib"), "results", str(notebook.parent),
                           "--csv", str(exported)], capture_output=True, text=True, check=False,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(exported.open(encoding="utf-8")))
    assert rows and rows[0]["env_var_nccl_net_plugin"] == "***"
    for text in (str(record), page, notebook.read_text(), exported.read_text(), done.stdout):
        assert not [leak for leak in leaks if leak in text]
