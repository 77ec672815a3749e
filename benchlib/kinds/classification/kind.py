"""The image classification kind (``train``, ``inference``, ``smooth_inference``): any
torchvision classifier on real or synthetic images."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlib import registry
from benchlib.kinds.base import Kind, register_kind

if TYPE_CHECKING:
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.workloads.result import RunResult

def flops_per_sample(config: ClassificationConfig) -> float:
    """FLOPs per counted sample (one image): forward for inference, forward + backward for
    training, ``noise_samples`` forward passes for smooth inference."""
    from benchlib.kinds.classification.workload import build_model
    from benchlib.records.flops import COUNT_BATCH, count_flops

    size = config.resolved_image_size
    train = registry.entry_of(config).trains
    flops = count_flops(lambda: build_model(config), (COUNT_BATCH, 3, size, size), train)
    per_image = flops / COUNT_BATCH
    smooth = "noise_samples" not in registry.entry_of(config).ignores
    return per_image * config.noise_samples if smooth else per_image


@register_kind("classification")
class Classification(Kind):
    """Images per second of a torchvision classifier."""

    run = "benchlib.kinds.classification.workload:run"
    samples = "images"
    data_field = "data_dir"

    def columns(self, config: ClassificationConfig, result: RunResult) -> dict[str, object]:
        columns: dict[str, object] = {
            "benchmark": config.benchmark, "model": config.model, "dataset": config.dataset,
            "synthetic_kind": config.synthetic_kind if config.dataset == "synthetic" else "",
            "data_source": config.data_source if config.dataset == "real" else "",
            "decode": config.decode if config.dataset == "real" else "",
            "image_size": config.resolved_image_size, "channels_last": config.channels_last,
            "compile": config.compile,
        }
        if "noise_samples" not in registry.entry_of(config).ignores:
            columns.update(noise_samples=config.noise_samples, sigma=config.sigma,
                           noisy_samples_per_s=result.throughput * config.noise_samples)
        return columns

    def flops_per_sample(self, config: ClassificationConfig) -> float:
        return flops_per_sample(config)

    def title(self, config: ClassificationConfig) -> str:
        return (f"{config.model} {config.benchmark}, batch {config.batch_size}, {config.dataset} "
                "data")

