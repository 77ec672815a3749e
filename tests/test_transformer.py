"""The GPT-2-style language model and its token batches, on the CPU with tiny sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from benchlib.kinds.language_model.data import file_batch, open_tokens, synthetic_batch, write_tokens
from benchlib.kinds.language_model.model import (
    GPT2_VOCAB,
    SIZES,
    TransformerLM,
    TransformerShape,
    language_model_loss,
)


def test_gpt2_small_has_the_published_parameter_count():
    # GPT-2 small: 124,439,808 parameters with its 50,257-token vocabulary (Hugging Face's
    # GPT2LMHeadModel, head tied); counted on the meta device, nothing allocated.
    shape = TransformerShape(layers=12, heads=12, width=768, vocab_size=GPT2_VOCAB)
    with torch.device("meta"):
        model = TransformerLM(shape)
    counted = sum(p.numel() for p in model.parameters())
    assert counted == shape.parameters == 124_439_808


@pytest.mark.parametrize("train", [False, True])
def test_flops_per_token_match_torch_flop_counter(train):
    shape = TransformerShape(layers=2, heads=4, width=64, vocab_size=1000, max_sequence=128)
    batch, sequence = 2, 128
    with torch.device("meta"):
        model = TransformerLM(shape).train(train)
        ids = torch.zeros(batch, sequence, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        if train:
            model(ids).float().sum().backward()
        else:
            with torch.no_grad():
                model(ids)
    per_token = counter.get_total_flops() / (batch * sequence)
    # the analytic count takes the full attention matrix, as FlopCounterMode does for sdpa
    assert per_token == pytest.approx(shape.flops_per_token(sequence, train), rel=0.01)


def test_tiny_model_learns_a_repeated_sequence():
    torch.manual_seed(0)
    model = TransformerLM(SIZES["tiny"])
    ids = torch.arange(33).remainder(7).unsqueeze(0).repeat(4, 1)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = language_model_loss(model(inputs), targets).item()
    for _ in range(60):
        loss = language_model_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < first / 4


def test_attention_is_causal():
    torch.manual_seed(0)
    model = TransformerLM(SIZES["tiny"]).eval()
    ids = torch.randint(512, (1, 16))
    changed = ids.clone()
    changed[0, 10:] = (changed[0, 10:] + 1) % 512
    with torch.no_grad():
        before, after = model(ids), model(changed)
    assert torch.allclose(before[0, :10], after[0, :10], atol=1e-6)
    assert not torch.allclose(before[0, 10:], after[0, 10:])


def test_too_long_a_sequence_and_bad_shapes_are_refused():
    model = TransformerLM(SIZES["tiny"])
    with pytest.raises(ValueError, match="longer than the model"):
        model(torch.zeros(1, 257, dtype=torch.long))
    with pytest.raises(ValueError, match="not a multiple of heads"):
        TransformerShape(layers=1, heads=3, width=64)
    with pytest.raises(ValueError, match="layers must be at least 1"):
        TransformerShape(layers=0, heads=1, width=64)


def test_token_file_windows_are_shifted_by_one(tmp_path):
    path = tmp_path / "train.bin"
    np.arange(1000, dtype=np.uint16).tofile(path)
    tokens = open_tokens(path, sequence=16, vocab_size=1000)
    inputs, targets = file_batch(tokens, 4, 16, np.random.default_rng(0))
    assert inputs.shape == targets.shape == (4, 16)
    assert inputs.dtype == torch.int64
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    assert torch.equal(targets - inputs, torch.ones_like(inputs))


def test_bad_token_files_are_refused(tmp_path):
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\x00" * 33)
    with pytest.raises(ValueError, match="whole number of uint16"):
        open_tokens(odd, sequence=4, vocab_size=10)
    short = write_tokens(tmp_path / "short.bin", 5, vocab_size=10)
    with pytest.raises(ValueError, match="fewer than one window"):
        open_tokens(short, sequence=8, vocab_size=10)
    wide = write_tokens(tmp_path / "wide.bin", 100, vocab_size=60000)
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        open_tokens(wide, sequence=8, vocab_size=512)


def test_synthetic_batch_is_reproducible_and_in_vocabulary():
    a = synthetic_batch(2, 8, 50, "cpu", seed=3)
    b = synthetic_batch(2, 8, 50, "cpu", seed=3)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert int(a[0].max()) < 50 and torch.equal(a[0][:, 1:], a[1][:, :-1])


# --- the workload (not yet a registered benchmark) -----------------------------------------

from benchlib.kinds.language_model import workload as language_model  # noqa: E402
from benchlib.kinds.language_model.config import LanguageModelConfig  # noqa: E402

TINY = dict(size="tiny", sequence_length=32, batch_size=2, iterations=3, warmup=1, device="cpu",
            telemetry_interval_s=0.0)


@pytest.mark.parametrize("benchmark", ["lm_train", "lm_inference"])
def test_workload_counts_tokens(benchmark):
    result = language_model.run(LanguageModelConfig(benchmark=benchmark, **TINY))
    assert result.unit == "tokens/s"
    assert result.iterations == 3
    assert result.samples == 3 * 2 * 32
    assert result.throughput > 0
    phases = set(result.per_iteration.columns)
    assert {"data", "h2d", "forward"} <= phases
    assert ("backward" in phases) == (benchmark == "lm_train")


def test_workload_reads_a_token_file(tmp_path):
    path = write_tokens(tmp_path / "train.bin", 10_000, vocab_size=512)
    config = LanguageModelConfig(dataset="tokens", token_file=str(path), **TINY)
    result = language_model.run(config)
    assert result.samples == 3 * 2 * 32
    assert result.extras["final_loss"] == pytest.approx(np.log(512), rel=0.2)


def test_config_names_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="size 'custom' needs layers, heads and width"):
        LanguageModelConfig(size="custom", layers=2)
    with pytest.raises(ValueError, match="apply to size 'custom' only"):
        LanguageModelConfig(size="gpt2", layers=2)
    with pytest.raises(ValueError, match="token_file is empty"):
        LanguageModelConfig(dataset="tokens")
    with pytest.raises(ValueError, match="does not exist"):
        LanguageModelConfig(dataset="tokens", token_file=str(tmp_path / "missing.bin"))
    custom = LanguageModelConfig(size="custom", layers=1, heads=2, width=32, vocab_size=100,
                                 sequence_length=2048)
    shape = language_model.model_shape(custom)
    assert (shape.layers, shape.heads, shape.width, shape.vocab_size, shape.max_sequence) == (
        1, 2, 32, 100, 2048)
