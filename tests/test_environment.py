"""Provenance in records: file system type, container, NUMA nodes, allow-listed variables."""

from pathlib import Path

import pytest
import torch

from benchlib.kinds import data_path
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.measure.environment import (
    allowed_environment,
    capture,
    container_image,
    filesystem_type,
    numa_nodes,
)
from benchlib.measure.redact import redact

MOUNTS = """\
overlay / overlay rw,relatime 0 0
proc /proc proc rw 0 0
10.0.0.5@o2ib:/scratch /scratch lustre rw,flock 0 0
server:/home /home nfs4 rw,vers=4.2 0 0
/dev/nvme0n1 /scratch/local\\040disk ext4 rw 0 0
"""


def test_the_data_directory_file_system_is_the_longest_mount_prefix():
    assert filesystem_type("/scratch/imagenet/train", MOUNTS) == "lustre"
    assert filesystem_type("/scratch/local disk/x.h5", MOUNTS) == "ext4"
    assert filesystem_type("/home/u/data", MOUNTS) == "nfs4"
    assert filesystem_type("/scratchy/x", MOUNTS) == "overlay"  # not under /scratch
    assert filesystem_type("", MOUNTS) == ""


def test_only_allow_listed_variables_are_copied_and_never_secrets():
    environ = {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5", "CUDA_VISIBLE_DEVICES": "0,1",
               "OMP_NUM_THREADS": "8", "NCCL_AUTH_TOKEN": "s3cret", "UCX_API_KEY": "s3cret",
               "AWS_SECRET_ACCESS_KEY": "s3cret", "HF_TOKEN": "s3cret", "HOME": "/root",
               "PATH": "/usr/bin"}
    assert allowed_environment(environ) == {
        "env_var_cuda_visible_devices": "0,1", "env_var_nccl_debug": "INFO",
        "env_var_nccl_ib_hca": "mlx5", "env_var_omp_num_threads": "8"}


def test_container_image_from_the_runtime(tmp_path):
    assert container_image({"APPTAINER_CONTAINER": "/images/pytorch.sif"}, tmp_path) \
        == "/images/pytorch.sif"
    assert container_image({}, tmp_path) == ""
    (tmp_path / ".dockerenv").touch()
    assert container_image({}, tmp_path) == "docker"


def test_numa_nodes_are_counted(tmp_path):
    for name in ("node0", "node1", "possible"):
        (tmp_path / name).mkdir()
    assert numa_nodes(tmp_path) == 2 and numa_nodes(tmp_path / "missing") == 0


def test_capture_adds_host_container_and_the_data_file_system(monkeypatch, image_dir: Path):
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.setenv("NCCL_PASSWORD", "hunter2")
    real = ClassificationConfig(dataset="real", data_dir=str(image_dir), device="cpu")
    assert data_path(real) == str(image_dir)
    assert data_path(ClassificationConfig(dataset="synthetic", device="cpu")) == ""
    env = capture(torch.device("cpu"), data_path(real))
    assert env["env_data_fs"] == filesystem_type(image_dir) and env["env_data_fs"]
    assert env["env_host"] and env["env_numa_nodes"] >= 0 and env["env_gpu_names"] == ""
    assert env["env_var_nccl_debug"] == "WARN"
    assert "hunter2" not in map(str, env.values())


def test_secret_looking_names_are_never_copied():
    environ = {"FI_CXI_PWD": "x1", "NCCL_IB_PASSWD": "x2", "UCX_CRED_FILE": "x3",
               "NCCL_PRIVATE_KEY": "x4", "NCCL_SOCKET_IFNAME": "ib0", "OMP_NUM_THREADS": "4"}
    assert allowed_environment(environ) == {"env_var_nccl_socket_ifname": "ib0",
                                            "env_var_omp_num_threads": "4"}


@pytest.mark.parametrize(("value", "expected"), [
    ("docker://alice:s3cret@registry.example.org/ml/pytorch:24.05",
     "docker://***@registry.example.org/ml/pytorch:24.05"),
    ("https://token@ghcr.io/x", "https://***@ghcr.io/x"),
    ("oras://registry/x?password=hunter2&arch=amd64", "oras://registry/x?password=***&arch=amd64"),
    ("--api-key=abc123 --verbose", "--api-key=*** --verbose"),
    ("/sw/containers/pytorch_24.05.sif", "/sw/containers/pytorch_24.05.sif"),
    ("Authorization: Bearer SECRETbearer8", "Authorization: *** ***"),
    ("pwd:SECRETpw15", "pwd:***"),
    ("/x?X-Amz-Signature=abc&sig=SECRETsig10", "/x?X-Amz-Signature=***&sig=***"),
    ("AKIAABCDEFGHIJKLMNOP:SECRETaws11", "***"),
    ("ib0:1", "ib0:1"),
])
def test_credentials_inside_values_are_masked(value, expected):
    assert redact(value) == expected
    assert container_image({"APPTAINER_CONTAINER": value}, root=Path("/nonexistent")) == expected
    assert allowed_environment({"NCCL_NET_PLUGIN": value}) == {"env_var_nccl_net_plugin": expected}
