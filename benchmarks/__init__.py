"""The benchmarks of attention-ref: time, memory and low-precision accuracy (not installed).

Run from the repository's root: ``python -m benchmarks`` (or ``nox -s bench``); ``--help``
lists the options, ``--parts`` runs only some of them. Each part is saved under its own
key of ``docs/bench-results/<device>.json``:

* ``forward`` (`benchmarks.attention`): time and extra peak memory of five attention
  implementations as n grows, and this machine's GEMM throughput (the top-level keys);
* ``train`` (`benchmarks.attention`): the forward and backward pass of the three exact ones
  (``"train"``);
* ``low-precision`` (`benchmarks.low_precision`): each function's and module's largest error
  in float16 and bfloat16, beside PyTorch's and beside the same formula computed in the
  input's dtype (``"low_precision"``); not a timing, so any machine gives the same table;
* ``decode`` (`benchmarks.decode`, CPU): time per generated token with and without the KV
  cache (``"decode"``);
* ``apis`` (`benchmarks.apis`, CPU): one causal attention layer written seven ways (the
  module, matmul, einsum, fused QKV + SDPA, ``nn.MultiheadAttention``, ``flex_attention``,
  ``flex_reference``), time and extra peak memory at n = 1024 and 4096 (``"apis"``);
* ``flex-cpu`` (`benchmarks.flex_cpu`, CPU): FlexAttention's first compiled call (caches
  off) and the steady state of the compiled kernel, eager ``flex_attention`` and
  ``flex_reference`` at n = 1024, causal, and the error a backward pass raises (``"flex_cpu"``);
* ``block-sparse`` (`benchmarks.block_sparse`, CPU): ``chunked_attention`` with a mask
  function (causal, a causal window, causal documents) against the same call computing every
  tile and SDPA with the dense mask, at n = 8192, forward and forward + backward, with its
  targets (``"block_sparse"``).

Every timing follows one protocol (`benchmarks.protocol`): round-robin rounds, the fastest
kept. `benchmarks.report` writes the file and prints the summary. The site draws its figures
from the file (docs_hooks/plots/cost.py and decoding.py); the build never benchmarks.
``attention_ref`` imports nothing from here.
"""
