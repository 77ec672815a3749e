"""The record columns only the 3D U-Net kind's runs have, each with its words and its form;
``benchlib.records.columns.every_column`` places them among the shared ones (settings
before the shared bookkeeping, measurements before the environment)."""

from __future__ import annotations

from benchlib.records.column import B, C, Column, M

#: The columns this kind adds to the record (docs/record.md lists them).
COLUMNS: tuple[Column, ...] = (
    Column("target", C, "text", "", "3D U-Net: affinities or boundaries"),
    Column("unet_{part}", C, "text", "", "3D U-Net network: depth, base_features, growth, "
           "padding, norm, pooling"),
    Column("augment", C, "bool", "", "3D U-Net training: augmentation on"),
    Column("patch_shape", C, "shape", "voxels", "3D U-Net training: input patch (ZxYxX)",
           lists=True,
           describes=16, label="patch (z x y x x)"),
    Column("block_shape", C, "shape", "voxels", "3D U-Net prediction: output block (ZxYxX)",
           lists=True,
           describes=17, label="block (z x y x x)"),
    Column("output_dtype", C, "text", "", "3D U-Net prediction: output dtype"),
    Column("output_shape", B, "shape", "voxels", "3D U-Net: network output for the patch"),
    Column("input_shape", B, "shape", "voxels", "3D U-Net prediction: input block with halo"),
    Column("halo", B, "shape", "voxels", "3D U-Net prediction: context around a block",
           lists=True),
    Column("pooling", B, "int", "", "3D U-Net: the pooling parameter (failed records)",
           minimum=1, lists=True),
    Column("downsampling", B, "shape", "", "3D U-Net: total pooling factor"),
    Column("volume", B, "text", "", "3D U-Net: HDF5 / zarr volume read"),
    Column("raw_key", B, "text", "", "3D U-Net: dataset of raw voxels"),
    Column("label_key", B, "text", "", "3D U-Net training: dataset of labels"),
    Column("output", B, "text", "", "3D U-Net prediction: file written"),
    Column("output_key", B, "text", "", "3D U-Net prediction: dataset written"),
    Column("result_parameters", M, "text", "", "the network's parameter count (a kind's result: "
           "the 3D U-Net's)", label="network parameters"),
)
