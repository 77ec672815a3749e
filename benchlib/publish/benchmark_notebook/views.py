"""How each kind of benchmark is shown: the comments beside its parameters, the defaults its
parameters cell shows, its headline and the title of its plots (what a kind is where records
are made and read is :mod:`benchlib.kinds`; its notebook's cells are
:mod:`benchlib.publish.benchmark_notebook.layouts`). A view is looked up by the registry
entry's ``kind``; a kind registers its view with :func:`register_view` (a site's kind from its own
package, as ``tests/example_kind`` does); a kind without one gets :class:`View`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from benchlib import formatting, registry
from benchlib.publish.benchmark_notebook import parameters


class View:
    """How a timed-loop benchmark is shown; kinds with their own words override."""

    #: Comments beside its notebooks' parameters, over :data:`parameters.COMMENTS`.
    comments: ClassVar[dict[str, str]] = {}

    def headline(self, config: Any, result: Any) -> str:
        """One line on what the run achieved: a timed loop's throughput, iterations and time;
        for another run (a site's kind that is not a loop), its throughput and unit if it has
        them."""
        if not all(hasattr(result, n) for n in ("unit", "iterations", "wall_time_s", "warmup")):
            throughput = getattr(result, "throughput", None)
            return "done" if throughput is None else \
                f"{throughput:.4g} {getattr(result, 'unit', '')}".strip()
        return (f"{result.throughput:.2f} {result.unit} over {result.iterations} timed "
                f"iterations ({result.wall_time_s:.2f} s; {result.warmup} warm-up excluded)")

    def title(self, config: Any) -> str:
        """What ran, for the title of its plots."""
        return f"{config.benchmark}, batch {config.batch_size}, {config.precision}"

    def defaults(self, entry: registry.Benchmark, fixed: dict[str, object]) -> Any:
        """The config whose values the parameters cell shows."""
        return entry.config(**fixed)

    def all_comments(self) -> dict[str, str]:
        """Every comment its parameters cell shows."""
        return {**parameters.COMMENTS, **self.comments}


#: The view of each kind, by the kind's registered name (:func:`register_view`).
VIEWS: dict[str, View] = {}
V = TypeVar("V", bound=type[View])


def register_view(*kinds: str) -> Callable[[V], V]:
    """Class decorator: the view of ``kinds`` (registered names of :mod:`benchlib.kinds`);
    ValueError when one has a view already."""
    def add(cls: V) -> V:
        for kind in kinds:
            if kind in VIEWS:
                raise ValueError(f"kind {kind!r} has a view already ({type(VIEWS[kind]).__name__})")
            VIEWS[kind] = cls()
        return cls
    return add


@register_view("classification")
class ClassificationView(View):
    """Images per second of a torchvision classifier."""

    def title(self, config: Any) -> str:
        return (f"{config.model} {config.benchmark}, batch {config.batch_size}, {config.dataset} "
                "data")


@register_view("language_model")
class LanguageModelView(View):
    """Tokens per second of a GPT-2-style transformer."""

    comments: ClassVar[dict[str, str]] = {
        "size": "tiny | mini | gpt2 (124M) | gpt2-medium | gpt2-large | gpt2-xl | custom",
        "layers": "size custom: transformer blocks",
        "heads": "size custom: attention heads (width a multiple of them)",
        "width": "size custom: embedding width",
        "vocab_size": "None: the size's (gpt2: 50304, GPT-2's 50257 padded to 64)",
        "sequence_length": "tokens per sequence; batch_size counts sequences",
        "dataset": "synthetic (ids made once on the device) | tokens (token_file)",
        "token_file": "uint16 token file, nanoGPT's .bin layout (dataset: tokens)",
        "num_workers": "unused: batches are made in the loop",
        "learning_rate": "AdamW (training only)",
    }

    def title(self, config: Any) -> str:
        return (f"{config.size} {config.benchmark}, batch {config.batch_size} x "
                f"{config.sequence_length} tokens, {config.precision}")


class UNet3DView(View):
    """A 3D U-Net: its headline in lab units, its network beside the configuration."""


    def headline(self, config: Any, result: Any) -> str:
        """In the units labs use: megavoxels/s written by a prediction, iterations/minute and
        megavoxels/s of output of a training run (``number``: never ``0.000``)."""
        mega = formatting.number(result.throughput / 1e6)
        if "voxels_written" in result.extras:
            return (f"{mega} megavoxels/s: {result.extras['voxels_written']:,} voxels in "
                    f"{result.extras['blocks']} blocks ({result.wall_time_s:.1f} s, reads and "
                    "writes included)")
        per_minute = 60 / result.stats()["iteration"].median
        return (f"{per_minute:.1f} iterations/minute (median iteration), {mega} megavoxels/s "
                f"of output over {result.iterations} timed iterations ({result.wall_time_s:.1f} s)")

    def title(self, config: Any) -> str:
        return f"3D U-Net {config.benchmark}, batch {config.batch_size}, {config.precision}"

    def defaults(self, entry: registry.Benchmark, fixed: dict[str, object]) -> Any:
        return entry.config.model_construct(**fixed)  # required fields (volume) have no default


@register_view("unet3d_train")
class UNet3DTrainView(UNet3DView):
    comments: ClassVar[dict[str, str]] = {
        "num_workers": "loader processes sampling patches (dataset: real)",
        "dataset": "synthetic (device tensors) | real (the volume)",
        "iterations": "Adam steps timed after warm-up (the reference ran 1001)"}


@register_view("unet3d_predict")
class UNet3DPredictView(UNet3DView):
    comments: ClassVar[dict[str, str]] = {
        "num_workers": "threads reading blocks ahead of the compute",
        "iterations": 'batches of blocks, or "epoch" for the whole volume',
        "warmup": "batches run before the timed pass, not written"}


@register_view("node_probe")
class NodeProbeView(View):
    comments: ClassVar[dict[str, str]] = {
        "precisions": "matmul precisions: fp32 | tf32 | fp16 | bf16",
        "matmul_size": "n of the n x n matrix products",
        "memory_bytes": "buffer copied within the device (bytes read + written per second)",
        "transfer_bytes": "buffer copied host <-> device, from pinned and from pageable memory",
        "iterations": "timed repetitions of each probe",
        "data_dir": "ImageNet-layout JPEG folder for the decode and read probes (empty: skip them)",
        "decode_workers": "loader worker counts to try (0: decode in this process)",
        "decode_batches": "timed batches per worker count",
        "read_max_bytes": "read at most this many bytes of data_dir",
        "allreduce_devices": "0: every visible GPU when there are 2 or more; 1: skip the all-reduce",
    }


def view_of(entry: registry.Benchmark) -> View:
    """The view of ``entry``'s kind (:class:`View`'s defaults for a kind without one)."""
    return VIEWS.get(entry.kind, View())


def view_for(config: Any) -> View:
    """The view of the kind that runs ``config``."""
    return view_of(registry.entry_of(config))
