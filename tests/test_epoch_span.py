"""An image folder sized for the timed span (issue 51, build 2): how many epoch boundaries fell
inside a run's timed span is in its record, and :func:`images_for_span` sizes a folder so that
none does and every loader worker still has a batch in flight at the last timed batch."""

from __future__ import annotations

import pytest

from benchlib.data.generate import write_imagefolder
from benchlib.data.imagefolder import PREFETCH_FACTOR, image_folder_loader, images_for_span
from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.classification.workload import Epochs

#: the image_dir fixture's 18 images leave a partial batch of 4 out (a warning each loader)
pytestmark = pytest.mark.filterwarnings("ignore:the last batch of each epoch:UserWarning")


def _train(image_dir, **changes) -> dict:
    config = dict(model="resnet18", image_size=32, num_classes=3, batch_size=4, iterations=3,
                  warmup=1, device="cpu", num_workers=0, telemetry_interval_s=0.0,
                  dataset="real", data_dir=str(image_dir))
    return classification.run(ClassificationConfig(benchmark="train", **{**config, **changes})
                              ).extras


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_a_timed_span_across_an_epoch_end_is_counted(image_dir):
    # 18 images in batches of 4: 4 batches an epoch; warm-up batch 0, timed batches 1 to 6
    # take the second epoch's first batch (index 4): one boundary in the timed span
    assert _train(image_dir, iterations=6)["epoch_boundaries_in_timed_loop"] == 1
    # 11 timed batches (1 to 11): new epochs begin at 4 and 8
    assert _train(image_dir, iterations=11)["epoch_boundaries_in_timed_loop"] == 2


def test_a_timed_span_inside_one_epoch_counts_none(image_dir):
    assert _train(image_dir, iterations=3)["epoch_boundaries_in_timed_loop"] == 0


def test_synthetic_data_has_no_epochs_to_count():
    extras = classification.run(ClassificationConfig(
        benchmark="inference", model="resnet18", image_size=32, num_classes=3, batch_size=2,
        iterations=2, warmup=1, device="cpu", dataset="synthetic",
        telemetry_interval_s=0.0)).extras
    assert "epoch_boundaries_in_timed_loop" not in extras


def test_epochs_note_where_each_pass_begins(image_dir):
    data = Epochs(image_folder_loader(str(image_dir), 32, 4, 0, train=False, pin_memory=False))
    batches = iter(data)
    for _ in range(9):
        next(batches)
    assert data.starts == [0, 4, 8] and data.taken == 9
    assert data.boundaries_within(0, 4) == 0  # the first pass's start is no boundary
    assert data.boundaries_within(1, 4) == 1
    assert data.boundaries_within(5, 3) == 0
    assert data.boundaries_within(4, 5) == 2


def test_images_for_span_covers_the_run_and_the_batches_in_flight():
    # gpu-check's JPEG point: 8 warm-up and 60 timed batches of 128, 8 workers
    needed = 8 + 60 + 8 * PREFETCH_FACTOR
    assert images_for_span(68, 128, 8) == (needed + 9) * 128  # 10 % more, in whole batches
    assert images_for_span(68, 128, 8, margin=0) == needed * 128
    assert images_for_span(3, 4, 0, ranks=2, margin=0) == 3 * 4 * 2
    with pytest.raises(ValueError, match="at least 1"):
        images_for_span(0, 128, 8)
    with pytest.raises(ValueError, match="at least 0"):
        images_for_span(1, 128, -1)


def test_a_folder_sized_for_the_span_keeps_the_workers_busy_to_its_end(tmp_path):
    warmup, iterations, batch, workers = 1, 4, 2, 2
    images = images_for_span(warmup + iterations, batch, workers)
    assert images == (5 + 4 + 1) * 2  # 2 batches in flight per worker, 10 % rounded up
    folder = write_imagefolder(tmp_path / "images", classes=2, images_per_class=images // 2,
                               size=32)
    extras = _train(folder, batch_size=batch, iterations=iterations, warmup=warmup,
                    num_workers=workers, num_classes=2)
    assert extras["epoch_boundaries_in_timed_loop"] == 0
    assert "images_dropped_per_epoch" not in extras  # whole batches: none left out
