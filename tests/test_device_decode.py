"""JPEGs decoded on the run's device (``decode: device``): the loader workers hand over each
file's bytes, the step decodes, crops and normalises the batch where the model runs (on this
CPU machine, in the training process; on a GPU, nvJPEG). Checked on the CPU: the images are
those the loader's own decode gives, a broken file is named, a bad setting is refused by name,
and a run records where it decoded."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from benchlib.data import device_decode, imagefolder
from benchlib.data.generate import write_imagefolder
from benchlib.errors import InputError
from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.classification.kind import Classification


def test_a_decoded_batch_is_what_the_loader_workers_would_have_made(image_dir):
    loader = device_decode.encoded_folder_loader(image_dir, 32, batch_size=4, num_workers=0,
                                                 train=False, pin_memory=False)
    encoded, labels = next(iter(loader))
    assert isinstance(encoded, device_decode.EncodedBatch) and len(encoded.data) == 4
    assert all(t.dtype == torch.uint8 and t.dim() == 1 for t in encoded.data)  # bytes only
    images = encoded.decode(torch.device("cpu"))
    reference = imagefolder.image_folder(image_dir, 32, train=False)
    expected = torch.stack([reference[i][0] for i in range(4)])
    assert images.shape == expected.shape == (4, 3, 32, 32) and images.dtype == torch.uint8
    # PIL and libjpeg-turbo's tensor path round and resize a little differently
    assert (images.float() - expected.float()).abs().mean() < 12
    assert labels.tolist() == [reference.samples[i][1] for i in range(4)]


def test_training_batches_are_cropped_to_the_size_through_a_worker(image_dir):
    loader = device_decode.encoded_folder_loader(image_dir, 40, batch_size=3, num_workers=1,
                                                 train=True, pin_memory=False)
    encoded, _ = next(iter(loader))
    assert encoded.decode(torch.device("cpu")).shape == (3, 3, 40, 40)


def test_a_broken_jpeg_in_a_batch_is_named(tmp_path):
    root = write_imagefolder(tmp_path / "images", classes=1, images_per_class=4, size=48)
    bad = sorted(root.glob("*/*.JPEG"))[2]
    bad.write_bytes(bad.read_bytes()[:40])
    loader = device_decode.encoded_folder_loader(root, 32, batch_size=4, num_workers=0,
                                                 train=False, pin_memory=False)
    encoded, _ = next(iter(loader))
    with pytest.raises(InputError, match=bad.name):
        encoded.decode(torch.device("cpu"))


@pytest.mark.parametrize("settings", [{"dataset": "synthetic"},
                                      {"dataset": "real", "data_source": "memory"}])
def test_decode_on_the_device_needs_real_data_read_from_disk(settings, image_dir):
    if settings["dataset"] == "real":
        settings = {**settings, "data_dir": str(image_dir)}
    with pytest.raises(ValidationError, match=r"decode 'device'.*allowed otherwise: 'loader'"):
        ClassificationConfig(decode="device", **settings)
    with pytest.raises(ValidationError, match="decode"):
        ClassificationConfig(decode="gpu")


def test_a_run_decoding_on_the_device_records_it_and_times_the_decode(tiny, image_dir):
    tiny.update(iterations=4, batch_size=4)
    config = ClassificationConfig(benchmark="train", dataset="real", data_dir=str(image_dir),
                                  decode="device", **tiny)
    result = classification.run(config)
    assert result.iterations == 4
    # the decode, crop and normalisation on the device are the preprocess phase
    assert (result.per_iteration["preprocess"] > 0).all()
    assert Classification().columns(config, result)["decode"] == "device"
    loader_config = config.model_copy(update={"decode": "loader"})
    assert Classification().columns(loader_config, result)["decode"] == "loader"


def test_only_jpeg_files_are_listed_and_a_png_under_a_jpeg_name_is_named(tmp_path):
    from PIL import Image

    root = write_imagefolder(tmp_path / "images", classes=1, images_per_class=2, size=48)
    Image.new("RGB", (48, 48)).save(root / "class_000" / "picture.png")
    folder = device_decode.EncodedFolder(root)
    assert all(p.endswith(".JPEG") for p, _ in folder.samples) and len(folder) == 2
    disguised = root / "class_000" / "disguised.jpg"
    Image.new("RGB", (48, 48)).save(disguised, format="PNG")
    loader = device_decode.encoded_folder_loader(root, 32, batch_size=3, num_workers=0,
                                                 train=False, pin_memory=False)
    encoded, _ = next(iter(loader))
    with pytest.raises(InputError, match=r"disguised\.jpg.*not a JPEG file \(decode: device "
                                         r"decodes JPEG only; decode: loader reads any image\)"):
        encoded.decode(torch.device("cpu"))
