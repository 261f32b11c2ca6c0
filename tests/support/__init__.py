"""Helpers shared by test modules of several directories; no test module imports another.

tests/ is on ``sys.path`` (pytest's default "prepend" import mode puts the directory of
tests/conftest.py there), so a test imports these as ``from support.reductions import ...``.

* ``execution``: running fusions in tests: the interpreter's warnings, a small device,
  the schedules and kernels of a run;
* ``reductions``: single reductions over layouts: inputs and oracles;
* ``pointwise_sweep``: the pointwise layout sweep's cases and oracles;
* ``programs``, ``program_reductions``, ``program_table``, ``program_steps``,
  ``program_draws``, ``program_families``: the generated programs
  (``tests/test_generated_programs.py``): values and error bounds, the ops' torch meaning,
  running a program, drawing one;
* ``seed``: the seed report's Thunder fusion;
* ``tensors``: tensors of a chosen memory order.
* ``thunder``: Lightning Thunder with layoutfuse as its nvFuser (skips without Thunder).

Fixtures live in the conftest.py files (``kernel_cache_in_tmp`` in tests/conftest.py).
"""
