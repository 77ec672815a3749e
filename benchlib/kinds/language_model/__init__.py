"""The language model kind (``lm_train``, ``lm_inference``): a GPT-2-style decoder-only transformer
on synthetic tokens or a token file, counted in tokens. One folder holds the whole kind, each
module in its role's layer (docs/architecture.md): ``config`` (the parameters and the variants),
``columns`` (the record columns only its runs have), ``model`` (the network, ``model_shapes``
its torch-free shapes, ``model_loss`` its loss), ``data`` (token files), ``workload`` (the timed
loop), ``kind`` (what its records say) and ``layout`` (its notebook's cells). Nothing outside
the folder imports it but the registries' discovery (:mod:`benchlib.discovery`)."""
