"""The 3D U-Net kind (``unet3d_train``, ``unet3d_predict``): a 3D U-Net trained on patches of an EM
volume (CREMI's layout) and run blockwise over a whole volume, reported in lab units
(iterations/minute, megavoxels/s). One folder holds the whole kind, each module in its role's
layer (docs/architecture.md): ``config`` (the parameters and the variants), ``columns`` (the
record columns only its runs have), ``model`` (the network, ``model_geometry`` its torch-free
shape arithmetic), ``data`` (HDF5 / zarr volumes, ``data_patches`` the training patches and
their targets, ``data_writer`` the sample volume), ``workload`` (training,
``workload_blockwise`` the blockwise prediction), ``kind`` (what its records say), ``layout``
(its notebooks' cells) and ``command`` (``benchlib data volume``). Nothing outside the folder
imports it but the registries' discovery (:mod:`benchlib.discovery`)."""
