"""A configurable 3D U-Net for volumetric (electron-microscopy) segmentation.

Depth, base features, feature growth per level, anisotropic pooling such as (1, 2, 2), valid or
same 3x3x3 convolutions and batch, group or no normalisation. The output is logits, one channel
per target (3 affinities or 1 boundary map). Shapes follow :class:`UNetGeometry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from benchlib.kinds.unet3d.model_geometry import Padding, Shape, UNetGeometry

Norm = Literal["none", "batch", "group"]


def _norm(kind: Norm, channels: int) -> nn.Module:
    if kind == "batch":
        return nn.BatchNorm3d(channels)
    if kind == "group":
        groups = max(g for g in range(1, 9) if channels % g == 0)
        return nn.GroupNorm(groups, channels)
    return nn.Identity()


class ConvBlock(nn.Sequential):
    """``convs`` x (3x3x3 convolution, normalisation, ReLU)."""

    def __init__(self, in_channels: int, out_channels: int, padding: Padding, norm: Norm,
                 convs: int = 2) -> None:
        layers: list[nn.Module] = []
        for index in range(convs):
            layers += [
                nn.Conv3d(in_channels if index == 0 else out_channels, out_channels, 3,
                          padding=1 if padding == "same" else 0, bias=norm == "none"),
                _norm(norm, out_channels),
                nn.ReLU(inplace=True),
            ]
        super().__init__(*layers)


def _center_crop(tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    starts = [(have - want) // 2 for have, want in zip(tensor.shape[-3:], shape, strict=True)]
    return tensor[..., starts[0]:starts[0] + shape[0], starts[1]:starts[1] + shape[1],
                  starts[2]:starts[2] + shape[2]]


class UNet3D(nn.Module):
    """3D U-Net: ``len(pooling)`` max-pool downsamplings, transposed-convolution upsampling,
    centre-cropped skip connections; level ``l`` has ``base_features * growth**l`` features."""

    def __init__(self, in_channels: int = 1, out_channels: int = 3, base_features: int = 12,
                 growth: int = 5, pooling: Sequence[Shape] = ((1, 3, 3), (1, 3, 3), (3, 3, 3)),
                 padding: Padding = "valid", norm: Norm = "batch") -> None:
        super().__init__()
        self.geometry = UNetGeometry(tuple(tuple(p) for p in pooling), padding)  # type: ignore[arg-type]
        features = [base_features * growth**level for level in range(len(pooling) + 1)]
        self.down = nn.ModuleList()
        channels = in_channels
        for level in range(len(pooling)):
            self.down.append(ConvBlock(channels, features[level], padding, norm))
            channels = features[level]
        self.pools = nn.ModuleList(nn.MaxPool3d(tuple(p)) for p in pooling)
        self.bottom = ConvBlock(channels, features[-1], padding, norm)
        self.upsample = nn.ModuleList(
            nn.ConvTranspose3d(features[level + 1], features[level], tuple(pooling[level]),
                               stride=tuple(pooling[level]))
            for level in range(len(pooling)))
        self.up = nn.ModuleList(ConvBlock(2 * features[level], features[level], padding, norm)
                                for level in range(len(pooling)))
        self.head = nn.Conv3d(features[0], out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block, pool in zip(self.down, self.pools, strict=True):
            x = block(x)
            skips.append(x)
            x = pool(x)
        x = self.bottom(x)
        for level in reversed(range(len(self.up))):
            x = self.upsample[level](x)
            x = torch.cat([_center_crop(skips[level], x.shape[-3:]), x], dim=1)
            x = self.up[level](x)
        return self.head(x)
