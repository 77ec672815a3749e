import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from benchlib.cli import main
from benchlib.data.imagefolder import image_folder, image_folder_loader
from benchlib.kinds.classification.data import RandomImages, device_batches, loader_batches
from benchlib.kinds.unet3d.data import RAW_KEY, open_volume


def test_imagefolder_writer_makes_decodable_varied_jpegs(image_dir):
    classes = sorted(p.name for p in image_dir.iterdir())
    assert classes == ["class_000", "class_001", "class_002"]
    files = sorted(image_dir.glob("*/*.JPEG"))
    assert len(files) == 18
    sizes = set()
    for path in files:
        with Image.open(path) as image:
            assert image.format == "JPEG"
            sizes.add(image.size)
            assert min(image.size) == 48
            pixels = torch.from_numpy(np.asarray(image.convert("L"), dtype=np.float32))
            assert pixels.std() > 5  # structure, not a flat colour
    assert len(sizes) > 3  # varied aspect ratios


def test_train_and_eval_transforms_give_the_asked_size(image_dir):
    train = image_folder(image_dir, 32, train=True)
    evaluation = image_folder(image_dir, 32, train=False)
    assert len(train) == 18 and train.classes == evaluation.classes
    assert train[0][0].shape == evaluation[0][0].shape == (3, 32, 32)
    assert train[0][0].dtype == torch.uint8  # normalised later, on the device
    loader = image_folder_loader(image_dir, 32, batch_size=5, num_workers=0, train=True,
                                 pin_memory=False)
    shapes = [images.shape[0] for images, _ in loader]
    assert shapes == [5, 5, 5]  # the partial last batch (3) left out: one shape


def test_device_batches_repeat_one_batch():
    batches = list(device_batches(4, 16, 10, torch.device("cpu"), count=3))
    assert len(batches) == 3
    assert batches[0][0] is batches[2][0]
    assert batches[0][0].shape == (4, 3, 16, 16) and int(batches[0][1].max()) < 10


def test_random_images_are_deterministic_and_loaded_in_batches():
    data = RandomImages(10, 16, 3, seed=1)
    assert torch.equal(data[4][0], data[4][0]) and not torch.equal(data[4][0], data[5][0])
    loader = loader_batches(4, 16, 3, length=10, num_workers=0, pin_memory=False)
    assert [len(labels) for _, labels in loader] == [4, 4, 2]


def test_normalize_scales_and_standardises_uint8_images():
    from benchlib.data.imagefolder import IMAGENET_MEAN, IMAGENET_STD, normalize

    images = torch.full((2, 3, 4, 4), 255, dtype=torch.uint8)
    out = normalize(images)
    assert out.dtype == torch.float32
    for channel in range(3):
        expected = (1 - IMAGENET_MEAN[channel]) / IMAGENET_STD[channel]
        assert torch.allclose(out[:, channel], torch.tensor(expected))


# -- benchlib data: sizes and targets refused before anything is written (exit 2) ---------------

def test_an_imagefolder_larger_than_the_disk_is_bad_input(tmp_path, capsys):
    target = tmp_path / "gen7"
    code = main(["data", "imagefolder", str(target), "--classes", "100000000", "--images",
                 "100000000", "--size", "4096"])
    err = capsys.readouterr().err
    assert code == 2 and "--classes 100000000, --images 100000000, --size 4096" in err, err
    assert "free" in err and not target.exists()


def _file(path: Path) -> Path:
    path.write_bytes(b"keep")
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("make", [_file, _fifo])
def test_an_imagefolder_over_a_file_or_fifo_is_bad_input(tmp_path, capsys, make):
    target = make(tmp_path / "ok.bin")
    kind = os.stat(target).st_mode
    assert main(["data", "imagefolder", str(target), "--classes", "1", "--images", "1",
                 "--size", "8"]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and "not a folder" in err, err
    assert os.stat(target).st_mode == kind


def _plain_folder(path: Path) -> Path:
    path.mkdir()
    (path / "notes.txt").write_text("mine")
    return path


@pytest.mark.parametrize(("name", "make", "why"), [
    ("v.zarr", _plain_folder, "not a zarr volume"), ("v.h5", _plain_folder, "a folder"),
    ("v.h5", _fifo, "a FIFO"), ("v.zarr", _fifo, "a FIFO"),
    ("v.h5", lambda p: p.symlink_to("/dev/null") or p, "a character device")])
def test_a_volume_over_a_folder_fifo_or_device_is_bad_input(tmp_path, capsys, name, make, why):
    target = make(tmp_path / name)
    assert main(["data", "volume", str(target), "--shape", "2", "8", "8", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and why in err, err
    if target.is_dir():
        assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_zarr_volume_is_replaced_by_a_new_one(tmp_path, capsys):
    target = tmp_path / "v.zarr"
    for shape in ("2", "3"):
        assert main(["data", "volume", str(target), "--shape", shape, "8", "8", "--quiet"]) == 0
    capsys.readouterr()
    with open_volume(target, RAW_KEY) as raw:
        assert raw.shape == (3, 8, 8)
