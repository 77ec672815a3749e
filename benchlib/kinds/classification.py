"""The image classification kind (``train``, ``inference``, ``smooth_inference``): any
torchvision classifier on real or synthetic images."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlib.kinds import Cells, Kind

if TYPE_CHECKING:
    from benchlib.inputs.config import ClassificationConfig
    from benchlib.registry import Benchmark
    from benchlib.workloads.result import RunResult

#: Parameters only the smooth inference notebook takes.
SMOOTH_ONLY = ("noise_samples", "sigma")


def flops_per_sample(config: ClassificationConfig) -> float:
    """FLOPs per counted sample (one image): forward for inference, forward + backward for
    training, ``noise_samples`` forward passes for smooth inference."""
    from benchlib.records.flops import COUNT_BATCH, count_flops
    from benchlib.workloads.classification import build_model

    size = config.resolved_image_size
    train = config.benchmark == "train"
    flops = count_flops(lambda: build_model(config), (COUNT_BATCH, 3, size, size), train)
    per_image = flops / COUNT_BATCH
    return per_image * config.noise_samples if config.benchmark == "smooth_inference" else per_image


class Classification(Kind):
    """Images per second of a torchvision classifier."""

    run = "benchlib.workloads.classification:run"

    def columns(self, config: ClassificationConfig, result: RunResult) -> dict[str, object]:
        columns: dict[str, object] = {
            "benchmark": config.benchmark, "model": config.model, "dataset": config.dataset,
            "synthetic_kind": config.synthetic_kind if config.dataset == "synthetic" else "",
            "data_source": config.data_source if config.dataset == "real" else "",
            "image_size": config.resolved_image_size, "channels_last": config.channels_last,
            "compile": config.compile,
        }
        if config.benchmark == "smooth_inference":
            columns.update(noise_samples=config.noise_samples, sigma=config.sigma,
                           noisy_samples_per_s=result.throughput * config.noise_samples)
        return columns

    def flops_per_sample(self, config: ClassificationConfig) -> float:
        return flops_per_sample(config)

    def title(self, config: ClassificationConfig) -> str:
        return (f"{config.model} {config.benchmark}, batch {config.batch_size}, {config.dataset} "
                "data")

    def parameter_names(self, entry: Benchmark) -> list[str]:
        names = super().parameter_names(entry)
        smooth = entry.benchmark == "smooth_inference"
        return names if smooth else [n for n in names if n not in SMOOTH_ONLY]

    def cells(self, entry: Benchmark) -> Cells:
        from benchlib.publish.benchmark_notebook import run

        how = run.PAPERMILL.format(params="params/X.yaml", name=entry.notebook,
                                   example="model resnet50")
        return (f"# {entry.title}\n\n{entry.description}\n\n{how}", "## Configuration",
                run.CLASSIFICATION)


CLASSIFICATION = Classification()
