"""The classification kind (``train``, ``inference``, ``smooth_inference``): a torchvision model on
tensors made once on the device, tensors a CPU loader makes, or an ImageNet-layout JPEG folder
read from the file system or from memory, with time split into data loading, processing, forward
and backward. One folder holds the whole kind, each module in its role's layer
(docs/architecture.md): ``config`` (the parameters, the torchvision models allowed and the
variants), ``columns`` (the record columns only its runs have), ``data`` (the synthetic batches;
JPEG folders are read by :mod:`benchlib.data`, which the node probe shares), ``workload`` (the
steps and the timed loop), ``kind`` (what its records say: columns, FLOPs per image) and
``layout`` (its notebooks' cells). Nothing outside the folder imports it but the registries'
discovery (:mod:`benchlib.discovery`)."""
