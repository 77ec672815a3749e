"""Data faults met while a run is going, named with their file and field; memory and disk
bounded; the last batch of a training epoch; the data path each run read recorded."""

from __future__ import annotations

import os
import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from benchlib.data import memory_folder
from benchlib.data.generate import write_imagefolder
from benchlib.data.imagefolder import image_folder, image_folder_loader
from benchlib.errors import InputError, OutputError
from benchlib.kinds.language_model.data import TOKEN_DTYPE, file_batch, open_tokens, write_tokens

# -- token ids beyond the vocabulary ---------------------------------------------------------


def _token_file(path: Path, good: int, bad: int, vocab: int) -> Path:
    ids = np.concatenate([np.arange(good) % vocab, np.full(bad, vocab + 7)]).astype(TOKEN_DTYPE)
    ids.tofile(path)
    return path


def test_token_ids_beyond_the_vocabulary_after_the_first_million_are_named(tmp_path):
    path = _token_file(tmp_path / "train.bin", 1_000_000, 3_000_000, vocab=100)
    tokens = open_tokens(path, 32, 100)  # the first million is fine
    generator = np.random.default_rng(0)
    with pytest.raises(InputError) as caught:
        for _ in range(20):
            file_batch(tokens, 8, 32, generator, vocab_size=100)
    message = str(caught.value)
    assert "token_file" in message and str(path) in message
    assert "107" in message and "vocab_size 100" in message and "offset" in message


def test_lm_run_on_a_token_file_with_bad_ids_fails_naming_the_file(tmp_path, tiny):
    from benchlib.kinds.language_model import workload as language_model
    from benchlib.kinds.language_model.config import LanguageModelConfig

    path = _token_file(tmp_path / "train.bin", 1_000_000, 3_000_000, vocab=100)
    config = LanguageModelConfig(benchmark="lm_inference", size="tiny", vocab_size=100,
                                 sequence_length=16, batch_size=8, iterations=20, warmup=0,
                                 device="cpu", num_workers=0, dataset="tokens",
                                 token_file=str(path))
    with pytest.raises(InputError, match=r"token_file .*vocab_size 100"):
        language_model.run(config)


def test_open_tokens_names_the_field(tmp_path):
    path = _token_file(tmp_path / "t.bin", 10, 100, vocab=100)
    with pytest.raises(InputError, match=r"token_file .*t\.bin.*offset 10.*vocab_size 100"):
        open_tokens(path, 4, 100)


# -- a broken image names its file -----------------------------------------------------------


@pytest.fixture
def truncated_dir(tmp_path) -> tuple[Path, Path]:
    root = write_imagefolder(tmp_path / "images", classes=2, images_per_class=3, size=48)
    bad = sorted(root.glob("*/*.JPEG"))[4]
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    return root, bad


def test_a_truncated_jpeg_is_named_by_its_path(truncated_dir):
    root, bad = truncated_dir
    folder = image_folder(root, 32, train=False)
    index = [p for p, _ in folder.samples].index(str(bad))
    with pytest.raises(InputError) as caught:
        folder[index]
    message = str(caught.value)
    assert str(bad) in message and "data_dir" in message and "truncated" in message


def test_a_truncated_jpeg_is_named_through_loader_workers(truncated_dir):
    root, bad = truncated_dir
    loader = image_folder_loader(root, 32, batch_size=2, num_workers=1, train=False,
                                 pin_memory=False)
    with pytest.raises(InputError, match=bad.name):
        for _ in loader:
            pass


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_a_truncated_jpeg_held_in_memory_is_named(truncated_dir):
    root, bad = truncated_dir
    loader = memory_folder.memory_folder_loader(root, 32, batch_size=2, num_workers=0,
                                                train=False, pin_memory=False)
    with pytest.raises(InputError, match=bad.name):
        for _ in loader:
            pass


# -- data_source: memory stays under its cap -------------------------------------------------


def _sized(tmp_path: Path, sizes: list[int]) -> list[tuple[str, int]]:
    samples = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"img_{i}.jpg"
        path.write_bytes(b"x" * size)
        samples.append((str(path), 0))
    return samples


def test_memory_source_skips_files_over_the_cap_and_stays_under_it(tmp_path):
    samples = _sized(tmp_path, [100, 5000, 100, 100, 300, 100])
    items = memory_folder.read_samples(samples, limit_bytes=400, where=str(tmp_path))
    assert sum(len(data) for _, data, _ in items) <= 400
    assert items and all(len(data) < 5000 for _, data, _ in items)


def test_memory_source_with_no_file_under_the_cap_names_folder_cap_and_smallest(tmp_path):
    samples = _sized(tmp_path, [8000, 5000])
    with pytest.raises(InputError) as caught:
        memory_folder.read_samples(samples, limit_bytes=1000, where=str(tmp_path))
    message = str(caught.value)
    assert "data_dir" in message and str(tmp_path) in message
    assert "1,000" in message and "5,000" in message


# -- the last batch of a training epoch ------------------------------------------------------


@pytest.fixture(scope="module")
def nine_images(tmp_path_factory) -> Path:
    return write_imagefolder(tmp_path_factory.mktemp("nine"), classes=3, images_per_class=3,
                             size=40)


def test_train_epoch_with_a_last_batch_of_one_drops_it_and_says_so(tiny, nine_images):
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig

    tiny.update(iterations="epoch", batch_size=4, warmup=0)
    config = ClassificationConfig(benchmark="train", dataset="real", data_dir=str(nine_images),
                                  **tiny)
    result = classification.run(config)
    assert result.samples == 8 and result.iterations == 2
    assert result.extras["images_dropped_per_epoch"] == 1


def test_train_fixed_count_over_epochs_with_a_last_batch_of_one(tiny, nine_images):
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig

    tiny.update(iterations=5, batch_size=4, warmup=0)
    config = ClassificationConfig(benchmark="train", dataset="real", data_dir=str(nine_images),
                                  **tiny)
    assert classification.run(config).samples == 20


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_synthetic_loader_train_epoch_with_a_last_batch_of_one(tiny):
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig

    tiny.update(iterations="epoch", batch_size=4, warmup=0, synthetic_kind="loader",
                synthetic_samples=9)
    result = classification.run(ClassificationConfig(benchmark="train", **tiny))
    assert result.samples == 8 and result.extras["images_dropped_per_epoch"] == 1


def test_every_timed_batch_has_one_shape(nine_images):
    """Inference and training leave an epoch's partial last batch out (a smaller batch makes
    cuDNN or compile tune again while the clock runs) and say how many images; an epoch of one
    partial batch is kept (it is the only shape)."""
    with pytest.warns(UserWarning, match="last batch of 1"):
        loader = image_folder_loader(nine_images, 32, 4, 0, train=False, pin_memory=False)
    assert [len(labels) for _, labels in loader] == [4, 4]
    assert loader.extras == {"images_dropped_per_epoch": 1}
    train = image_folder_loader(nine_images, 32, 4, 0, train=True, pin_memory=False)
    assert [len(labels) for _, labels in train] == [4, 4]
    whole = image_folder_loader(nine_images, 32, 16, 0, train=False, pin_memory=False)
    assert [len(labels) for _, labels in whole] == [9] and whole.extras == {}


# -- writers: a temporary name, free space checked first -------------------------------------

Usage = namedtuple("Usage", "total used free")


def _no_space(monkeypatch, free: int = 1000) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 10**12 - free, free))


def test_interrupted_volume_write_leaves_nothing_at_path(tmp_path, monkeypatch):
    from benchlib.kinds.unet3d import data_writer as em_volume

    calls = []
    real = em_volume.em_plane

    def interrupted(z, *args, **kwargs):
        calls.append(z)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return real(z, *args, **kwargs)

    monkeypatch.setattr(em_volume, "em_plane", interrupted)
    path = tmp_path / "em.h5"
    with pytest.raises(KeyboardInterrupt):
        em_volume.write_em_volume(path, (16, 32, 32), chunks=(2, 32, 32), progress=False,
                                  workers=1)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
@pytest.mark.parametrize("suffix", [".h5", ".zarr"])
def test_volume_write_replaces_a_previous_one_whole(tmp_path, suffix):
    from benchlib.kinds.unet3d.data import RAW_KEY, check_volume
    from benchlib.kinds.unet3d.data_writer import write_em_volume

    path = tmp_path / f"em{suffix}"
    write_em_volume(path, (4, 16, 16), progress=False, workers=1)
    write_em_volume(path, (6, 16, 16), progress=False, workers=1)
    assert check_volume(path, RAW_KEY) == (6, 16, 16)
    assert sorted(os.listdir(tmp_path)) == [path.name]


def test_volume_write_on_a_full_disk_stops_before_writing(tmp_path, monkeypatch):
    from benchlib.kinds.unet3d.data_writer import write_em_volume

    _no_space(monkeypatch)
    with pytest.raises(OutputError, match=r"em\.h5.*free"):
        write_em_volume(tmp_path / "em.h5", (64, 64, 64), progress=False, workers=1)
    assert os.listdir(tmp_path) == []


def test_imagefolder_and_tokens_writers_check_free_space(tmp_path, monkeypatch):
    _no_space(monkeypatch)
    with pytest.raises(OutputError, match=r"images.*free"):
        write_imagefolder(tmp_path / "images", classes=2, images_per_class=50, size=256)
    assert not (tmp_path / "images").exists()
    with pytest.raises(OutputError, match=r"t\.bin.*free"):
        write_tokens(tmp_path / "t.bin", 10_000, 100)
    assert os.listdir(tmp_path) == []


def test_token_writer_failing_midway_keeps_the_previous_file(tmp_path, monkeypatch):
    path = write_tokens(tmp_path / "t.bin", 100, 50)
    before = path.read_bytes()

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("benchlib.kinds.language_model.data._write_ids", full)
    with pytest.raises(OSError):
        write_tokens(path, 200, 50)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["t.bin"]


# -- images that must keep loading -----------------------------------------------------------


def test_cmyk_16_bit_palette_webp_and_non_utf8_names_load(tmp_path):
    folder = tmp_path / "odd" / "class_0"
    folder.mkdir(parents=True)
    rgb = Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 50, 3), dtype=np.uint8))
    rgb.convert("CMYK").save(folder / "cmyk.jpg")
    Image.fromarray(np.full((40, 50), 40000, dtype=np.uint16)).save(folder / "deep.png")
    rgb.convert("P").save(folder / "palette.png")
    rgb.save(folder / "pic.webp")
    rgb.save(os.fsencode(folder) + b"/caf\xe9.jpg")
    dataset = image_folder(tmp_path / "odd", 32, train=True)
    assert len(dataset) == 5
    for index in range(len(dataset)):
        image, _ = dataset[index]
        assert image.shape == (3, 32, 32) and image.dtype == torch.uint8
    in_memory = memory_folder.memory_folder_loader(tmp_path / "odd", 32, 5, 0, train=False,
                                                   pin_memory=False)
    images, _ = next(iter(in_memory))
    assert images.shape == (5, 3, 32, 32)


def test_a_broken_image_with_a_non_utf8_name_is_named(tmp_path):
    folder = tmp_path / "odd" / "class_0"
    folder.mkdir(parents=True)
    Image.new("RGB", (40, 40)).save(folder / "fine.jpg")
    data = (folder / "fine.jpg").read_bytes()
    with open(os.fsencode(folder) + b"/caf\xe9.jpg", "wb") as file:
        file.write(data[: len(data) // 2])
    dataset = image_folder(tmp_path / "odd", 32, train=False)
    with pytest.raises(InputError, match=r"caf\\udce9\.jpg"):
        [dataset[i] for i in range(len(dataset))]


# -- the data path each run read -------------------------------------------------------------


def test_records_name_the_resolved_data_path_and_group_two_folders_apart(tiny, image_dir,
                                                                          tmp_path):
    from benchlib.analysis import aggregate
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.kinds.record import make_record
    from benchlib.records.schema import column

    link = tmp_path / "other"
    link.symlink_to(image_dir)
    records = []
    for folder in (image_dir, link):
        config = ClassificationConfig(benchmark="inference", dataset="real",
                                      data_dir=str(folder), **tiny)
        records.append(make_record(config, classification.run(config), env={}))
    assert records[0]["data_path"] == records[1]["data_path"] == str(image_dir.resolve())
    synthetic = ClassificationConfig(benchmark="inference", **tiny)
    assert make_record(synthetic, classification.run(synthetic), env={})["data_path"] == ""
    assert column("data_path").role == "configuration"

    import pandas as pd

    from benchlib.records.store import ITERATIONS_KEY

    other = {**records[1], "data_path": "/scratch/images"}
    table = aggregate(pd.DataFrame([records[0], other]).drop(columns=ITERATIONS_KEY))
    assert len(table) == 2


def test_data_path_is_redacted(tmp_path):
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.kinds.record import recorded_data_path

    folder = tmp_path / "token=abcdef123456"
    folder.mkdir()

    config = ClassificationConfig.model_construct(dataset="real", data_dir=str(folder))
    assert recorded_data_path(config).endswith("token=***")


def test_data_path_of_each_kind_of_data(tmp_path, image_dir):
    from benchlib.kinds.language_model.config import LanguageModelConfig
    from benchlib.kinds.record import recorded_data_path

    tokens = write_tokens(tmp_path / "train.bin", 100, 50)
    config = LanguageModelConfig(dataset="tokens", token_file=str(tokens), size="tiny",
                                 sequence_length=16)
    assert recorded_data_path(config) == str(tokens.resolve())

    from benchlib.kinds.unet3d.config import UNet3DPredictConfig

    volume = UNet3DPredictConfig.model_construct(volume=str(tmp_path / "." / "em.h5"))
    assert recorded_data_path(volume) == str(tmp_path.resolve() / "em.h5")


def test_cli_volume_on_a_full_disk_is_refused_naming_shape_and_path(tmp_path, monkeypatch,
                                                                    capsys):
    """The command checks with the writer's own estimate before writing: exit 2 naming --shape
    and the path, nothing written."""
    from benchlib.cli import main

    _no_space(monkeypatch)
    path = tmp_path / "em.h5"
    assert main(["data", "volume", str(path), "--shape", "64", "64", "64", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--shape 64 64 64: no space for" in err and "em.h5" in err
    assert os.listdir(tmp_path) == []
