"""Benchmarks of layoutfuse against eager PyTorch and torch.compile on memory-bound
reductions, normalizations and pointwise copies in many memory orders.

A top-level package of the repository, not in the layoutfuse wheel: run
``python -m benchmarks --help`` from the repository root. Cases live in :mod:`.cases`, timing in
:mod:`.harness`, the peers in :mod:`.peers`, the layoutfuse side in
:mod:`.layoutfuse_runner`, and the result file's schema in :mod:`.report`.
"""
