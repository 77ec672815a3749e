import numpy as np
import torch
from PIL import Image

from benchlib.data.imagefolder import image_folder, image_folder_loader
from benchlib.data.synthetic import RandomImages, device_batches, loader_batches


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
    assert shapes == [5, 5, 5, 3]


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
