"""The probes (``allreduce``, ``node_probe``): what the node can do at most, not a workload: the
all-reduce's bus bandwidth over message sizes (as nccl-tests times it), and the node probe's
matmul TFLOP/s per precision (the best single call and the maximum achievable over shapes),
memory and host-link bandwidth, JPEG decode against loader workers and the data directory's read
throughput. One folder holds the whole kind, each module in its role's layer
(docs/architecture.md): ``config`` (the parameters and the variants), ``columns`` (the record
columns only its runs have), ``workload`` (the node probe, ``workload_collectives`` the
all-reduce, ``workload_achievable`` MAMF and STREAM), ``kind`` (what their records say:
ceilings, fleet columns), ``launch`` (the node probe's all-reduce through torchrun) and
``layout`` (their notebooks' cells). Nothing outside the folder imports it but the registries'
discovery (:mod:`benchlib.discovery`)."""
