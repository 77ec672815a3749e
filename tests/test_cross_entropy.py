"""The language model's loss without an fp32 copy of all the logits (issue 51, build 1): the
value and gradients of ``F.cross_entropy(logits.float(), targets)``, with a lower peak memory."""

from __future__ import annotations

import weakref

import pytest
import torch
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from benchlib.kinds.language_model import model_loss as cross_entropy
from benchlib.kinds.language_model.model import SIZES, TransformerLM, language_model_loss
from benchlib.kinds.language_model.model_loss import chunked_cross_entropy, rows_per_block

ROWS, VOCAB = 96, 1000


class LiveBytes(TorchDispatchMode):
    """The bytes of tensor storages made inside the mode and still alive, and their peak (CPU
    allocators keep no statistics; views of a storage count once, inputs' storages not at all)."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._seen: set[int] = set()

    def _free(self, key: int, size: int) -> None:
        self.live -= size
        self._seen.discard(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {id(t.untyped_storage()) for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = id(storage)
            if key in self._seen or key in inputs:
                continue
            self._seen.add(key)
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, key, storage.nbytes())
        return out


def _logits(dtype: torch.dtype, rows: int = ROWS, vocab: int = VOCAB, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(rows, vocab, generator=generator)).to(dtype).requires_grad_()
    targets = torch.randint(vocab, (rows,), generator=generator)
    return logits, targets


def _reference(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and gradient the model had: cross-entropy on an fp32 copy of the logits."""
    leaf = logits.detach().clone().requires_grad_()
    loss = F.cross_entropy(leaf.float(), targets)
    loss.backward()
    return loss.detach(), leaf.grad


@pytest.mark.parametrize("block_bytes", [4 * VOCAB, 4 * VOCAB * 7, 4 * VOCAB * ROWS * 2])
def test_fp32_loss_and_gradient_equal_cross_entropy(block_bytes):
    # one row a block, blocks that do not divide the rows, and one block for all
    logits, targets = _logits(torch.float32)
    expected_loss, expected_grad = _reference(logits, targets)
    loss = chunked_cross_entropy(logits, targets, block_bytes=block_bytes)
    loss.backward()
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected_loss.item(), abs=1e-5)
    torch.testing.assert_close(logits.grad, expected_grad, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_loss_is_computed_in_fp32_with_a_gradient_in_the_logits_dtype(dtype):
    logits, targets = _logits(dtype)
    expected_loss, expected_grad = _reference(logits, targets)
    loss = chunked_cross_entropy(logits, targets, block_bytes=4 * VOCAB * 10)
    loss.backward()
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected_loss.item(), abs=1e-5)
    assert logits.grad.dtype == dtype
    torch.testing.assert_close(logits.grad, expected_grad)  # the dtype's own tolerance


def test_the_gradient_scales_with_the_upstream_gradient():
    logits, targets = _logits(torch.float32)
    _, expected_grad = _reference(logits, targets)
    (2.5 * chunked_cross_entropy(logits, targets, block_bytes=4 * VOCAB * 8)).backward()
    torch.testing.assert_close(logits.grad, 2.5 * expected_grad)


def test_model_loss_and_gradients_are_unchanged_under_bf16_autocast():
    torch.manual_seed(0)
    model = TransformerLM(SIZES["tiny"])
    ids = torch.randint(512, (2, 33))
    inputs, targets = ids[:, :-1], ids[:, 1:]
    results = []
    for loss_of in (lambda x, t: F.cross_entropy(x.reshape(-1, x.shape[-1]).float(),
                                                 t.reshape(-1)),
                    language_model_loss):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(inputs)
        assert logits.dtype == torch.bfloat16
        loss = loss_of(logits, targets)
        loss.backward()
        results.append((loss.item(), [p.grad.clone() for p in model.parameters()]))
    (loss_a, grads_a), (loss_b, grads_b) = results
    assert loss_b == pytest.approx(loss_a, abs=1e-5)
    for a, b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-3)


def _peak_of_loss_step(loss_of, logits: torch.Tensor, targets: torch.Tensor) -> int:
    with LiveBytes() as live:
        loss_of(logits, targets).backward()
    return live.peak


def test_the_model_loss_peaks_below_one_fp32_copy_of_the_logits(monkeypatch):
    # bf16 logits of 512 rows x 4,000: the fp32 copy alone is 8.2 MB; blocks of 1/8 of it
    rows, vocab = 512, 4000
    monkeypatch.setattr(cross_entropy, "BLOCK_BYTES", rows * vocab * 4 // 8)
    fp32_copy = rows * vocab * 4
    logits, targets = _logits(torch.bfloat16, rows, vocab)
    before = _peak_of_loss_step(
        lambda x, t: F.cross_entropy(x.float(), t), logits, targets)
    logits.grad = None
    after = _peak_of_loss_step(language_model_loss, logits.unsqueeze(0), targets.unsqueeze(0))
    assert before >= 2 * fp32_copy  # the copy, the saved log-softmax, an fp32 gradient
    assert after < fp32_copy  # the bf16 gradient (half a copy) and about two fp32 blocks
    assert after < before / 2


def test_rows_per_block_and_bad_shapes():
    assert rows_per_block(50_304) == 256 * 2**20 // (4 * 50_304)
    assert rows_per_block(10**9, block_bytes=16) == 1
    with pytest.raises(ValueError, match="at least 1"):
        rows_per_block(0)
    with pytest.raises(ValueError, match=r"logits \(rows, vocab\)"):
        chunked_cross_entropy(torch.zeros(2, 3, 4), torch.zeros(2, 3, dtype=torch.long))


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_the_loss_compiles_with_its_gradient():
    # torch.compile traces the autograd.Function (aot_eager: no C++ compiler needed on a CPU)
    logits, targets = _logits(torch.bfloat16)
    expected_loss, expected_grad = _reference(logits, targets)
    compiled = torch.compile(language_model_loss, backend="aot_eager", fullgraph=True)
    loss = compiled(logits.unsqueeze(0), targets.unsqueeze(0))
    loss.backward()
    assert loss.item() == pytest.approx(expected_loss.item(), abs=1e-5)
    torch.testing.assert_close(logits.grad, expected_grad)
