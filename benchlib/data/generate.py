"""Writers of small sample data sets for demos and tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from benchlib.data.space import check_free_space

#: JPEG bytes per pixel of the writer's pictures at quality 90 (measured: 0.23 at 256 px,
#: 0.5 at 48 px) and a file system block per file: an estimate on the high side.
JPEG_BYTES_PER_PIXEL = 0.5
BLOCK_BYTES = 4096


def _image(rng: np.random.Generator, width: int, height: int, hue: np.ndarray) -> Image.Image:
    """A photo-like picture: a smooth gradient, shapes in the class's colours, sensor noise."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    ramp = (np.cos(angle) * x / width + np.sin(angle) * y / height + 1) / 2
    base = (ramp[..., None] * hue[None, None, :] * 0.6 + rng.uniform(20, 80, 3)).clip(0, 255)
    image = Image.fromarray(base.astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 8))):
        x0, y0 = rng.uniform(0, width), rng.uniform(0, height)
        w, h = rng.uniform(0.1, 0.5) * width, rng.uniform(0.1, 0.5) * height
        colour = tuple(int(c) for c in (hue * rng.uniform(0.5, 1.2) + rng.normal(0, 20, 3)).clip(0, 255))
        box = [x0 - w / 2, y0 - h / 2, x0 + w / 2, y0 + h / 2]
        if rng.random() < 0.5:
            draw.ellipse(box, fill=colour)
        else:
            draw.rectangle(box, fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.5, 1.5))))
    noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, (height, width, 3))
    return Image.fromarray(noisy.clip(0, 255).astype(np.uint8))


def write_imagefolder(
    root: str | Path, classes: int = 4, images_per_class: int = 16, size: int = 256,
    seed: int = 0, quality: int = 90,
) -> Path:
    """Write an ImageNet-layout JPEG folder: ``root/class_XXX/img_XXXXX.JPEG``.

    Images are about ``size`` px on the short side with varied aspect ratios (so that
    RandomResizedCrop and Resize + CenterCrop do real work). Free space is checked against
    :func:`estimated_bytes` before anything is written (OutputError). Returns ``root``.
    """
    if classes < 1 or images_per_class < 1 or size < 8:
        raise ValueError("classes and images_per_class must be >= 1 and size >= 8")
    root = Path(root)
    check_space(root, classes, images_per_class, size)
    rng = np.random.default_rng(seed)
    for c in range(classes):
        folder = root / f"class_{c:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        hue = rng.uniform(40, 255, 3)
        for i in range(images_per_class):
            aspect = rng.uniform(1.0, 1.5)
            width, height = (int(size * aspect), size) if rng.random() < 0.5 else (size, int(size * aspect))
            path = folder / f"img_{i:05d}.JPEG"
            tmp = path.with_suffix(".tmp")
            try:
                _image(rng, width, height, hue).save(tmp, format="JPEG", quality=quality)
                tmp.replace(path)
            finally:
                tmp.unlink(missing_ok=True)
    return root


def check_space(root: str | Path, classes: int, images_per_class: int, size: int) -> None:
    """OutputError when the file system of ``root`` has not about :func:`estimated_bytes` of
    the folder's pictures free (checked before the writer writes anything)."""
    check_free_space(Path(root) / "class_000", estimated_bytes(classes * images_per_class, size))


def estimated_bytes(images: int, size: int) -> int:
    """Bytes ``images`` pictures of about ``size`` px on the short side take (aspect 1.25 on
    average, :data:`JPEG_BYTES_PER_PIXEL`, a block per file)."""
    return int(images * (size * size * 1.25 * JPEG_BYTES_PER_PIXEL + BLOCK_BYTES))
