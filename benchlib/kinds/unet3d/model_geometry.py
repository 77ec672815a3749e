"""Shape arithmetic of a 3D U-Net: which input shapes fit, what comes out, how much context.

Pure Python (no torch), so configs can be checked before anything heavy is imported. A level
runs ``convs`` 3x3x3 convolutions; ``valid`` convolutions shrink each axis by 2 per convolution,
``same`` ones keep it. Between levels, max pooling by the level's factor needs the size to be
divisible by it; on the way up, a transposed convolution multiplies by the factor and the skip
connection is centre-cropped to match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from benchlib.errors import ShapeError

Shape = tuple[int, int, int]
Padding = Literal["valid", "same"]
AXES = ("z", "y", "x")


@dataclass(frozen=True)
class UNetGeometry:
    """Shapes through a U-Net with ``len(pooling)`` downsamplings."""

    pooling: tuple[Shape, ...]
    padding: Padding = "valid"
    convs: int = 2
    kernel: int = 3

    @property
    def depth(self) -> int:
        return len(self.pooling)

    @property
    def downsampling(self) -> Shape:
        """Product of the pooling factors per axis: input and block grids must align to it."""
        return tuple(math.prod(p[a] for p in self.pooling) for a in range(3))  # type: ignore[return-value]

    def _shrink(self) -> int:
        return self.convs * (self.kernel - 1) if self.padding == "valid" else 0

    def axis_output(self, size: int, axis: int) -> int | None:
        """Output size along ``axis`` for input ``size``, or None when it does not fit."""
        shrink = self._shrink()
        skips = []
        for factors in self.pooling:
            size -= shrink
            if size < 1 or size % factors[axis]:
                return None
            skips.append(size)
            size //= factors[axis]
        size -= shrink
        if size < 1:
            return None
        for factors, skip in zip(reversed(self.pooling), reversed(skips), strict=True):
            size *= factors[axis]
            if (skip - size) % 2 or skip < size:
                return None
            size -= shrink
            if size < 1:
                return None
        return size

    def _nearby(self, size: int, axis: int, count: int = 3) -> list[int]:
        found = [n for n in range(max(1, size - 400), size + 400) if self.axis_output(n, axis)]
        return sorted(found, key=lambda n: (abs(n - size), n))[:count]

    def output_shape(self, input_shape: Shape, what: str = "patch_shape") -> Shape:
        """The output shape for ``input_shape``; ShapeError naming the axis and sizes that fit."""
        out = []
        for axis, size in enumerate(input_shape):
            result = self.axis_output(int(size), axis)
            if result is None:
                nearby = ", ".join(map(str, sorted(self._nearby(int(size), axis))))
                raise ShapeError(
                    f"{what} {list(input_shape)} does not fit the network's downsampling "
                    f"{list(self.downsampling)} ({self.padding} convolutions) along "
                    f"{AXES[axis]}: {size} is not a valid input size; nearest that fit: {nearby}")
            out.append(result)
        return tuple(out)  # type: ignore[return-value]

    def smallest_input(self) -> Shape:
        """The smallest input shape the network takes."""
        return tuple(next(n for n in range(1, 100_000) if self.axis_output(n, a))  # type: ignore[return-value]
                     for a in range(3))

    @property
    def valid_halo(self) -> Shape:
        """Context per side that valid convolutions consume (input - output) / 2; the receptive
        field's radius. Zero for same convolutions is not implied: see :meth:`context`."""
        valid = UNetGeometry(self.pooling, "valid", self.convs, self.kernel)
        smallest = valid.smallest_input()
        out = valid.output_shape(smallest)
        return tuple((i - o) // 2 for i, o in zip(smallest, out, strict=True))  # type: ignore[return-value]

    def default_halo(self) -> Shape:
        """Halo for blockwise prediction: what valid convolutions consume; for same convolutions
        the receptive-field radius rounded up to the downsampling grid (so blocks stitch exactly)."""
        if self.padding == "valid":
            return self.valid_halo
        return tuple(-(-h // f) * f for h, f in zip(self.valid_halo, self.downsampling, strict=True))  # type: ignore[return-value]

    def block_input(self, block: Shape, halo: Shape) -> tuple[Shape, Shape]:
        """Input and output shape used to predict an output ``block`` with ``halo`` context.

        Valid convolutions: the smallest valid input whose output covers the block (extra output
        beyond the block is discarded). Same convolutions: block + 2 x halo, which must fit.
        """
        if self.padding == "same":
            shape = tuple(b + 2 * h for b, h in zip(block, halo, strict=True))
            return shape, self.output_shape(shape, "block_shape + 2 x halo")  # type: ignore[return-value]
        shape = []
        for axis, (b, h) in enumerate(zip(block, halo, strict=True)):
            n = b + 2 * h
            while self.axis_output(n, axis) is None or self.axis_output(n, axis) < b:
                n += 1
            shape.append(n)
        return tuple(shape), self.output_shape(tuple(shape))  # type: ignore[return-value]


def shape_text(shape: object) -> str:
    """A (z, y, x) shape as ``ZxYxX`` (flat, groupable record values)."""
    return "x".join(str(int(v)) for v in shape)  # type: ignore[union-attr]
