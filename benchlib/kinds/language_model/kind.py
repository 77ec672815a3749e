"""The language model kind (``lm_train``, ``lm_inference``): a GPT-2-style decoder-only
transformer on synthetic tokens or a token file, counted in tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from benchlib import registry
from benchlib.kinds.base import Kind, register_kind

if TYPE_CHECKING:
    from benchlib.kinds.language_model.config import LanguageModelConfig
    from benchlib.workloads.result import RunResult


@register_kind("language_model")
class LanguageModel(Kind):
    """Tokens per second of a GPT-2-style transformer; a sample is a token."""

    run = "benchlib.kinds.language_model.workload:run"
    samples = "tokens"
    data_field = "token_file"
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

    def columns(self, config: LanguageModelConfig, result: RunResult) -> dict[str, object]:
        from benchlib.kinds.language_model.workload import model_shape

        shape = model_shape(config)
        return {
            "benchmark": config.benchmark, "model": "transformer", "dataset": config.dataset,
            "synthetic_kind": "device" if config.dataset == "synthetic" else "",
            "compile": config.compile, "channels_last": False, "lm_size": config.size,
            "lm_layers": shape.layers, "lm_heads": shape.heads, "lm_width": shape.width,
            "lm_vocab": shape.vocab_size, "sequence_length": config.sequence_length,
            "parameters": shape.parameters,
        }

    def flops_per_sample(self, config: LanguageModelConfig) -> float:
        """Model FLOPs per token (:meth:`TransformerShape.flops_per_token`): forward for
        inference, forward and backward (3x) for training."""
        from benchlib.kinds.language_model.workload import model_shape

        return model_shape(config).flops_per_token(config.sequence_length,
                                                   train=registry.entry_of(config).trains)

    def title(self, config: LanguageModelConfig) -> str:
        return (f"{config.size} {config.benchmark}, batch {config.batch_size} x "
                f"{config.sequence_length} tokens, {config.precision}")
