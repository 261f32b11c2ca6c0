"""The seed's Thunder fusion (``tests/support/seed.py``): printed like nvFuser, run through
the reference evaluator and through generated kernels."""

import inspect

from support import seed
from support.execution import assert_ran_kernels, schedules
from support.seed import check_seed_outputs, define_seed, seed_inputs


def test_seed_definition_prints_like_nvfuser():
    fd = define_seed()
    assert fd.inputs() == [0, 1, 2] and fd.outputs() == [79, 63, 98]
    source = inspect.getsource(seed)
    start = source.index("def nvfuser_fusion_id33")
    expected = source[start : source.index("fd.add_output(T98)", start) + len("fd.add_output(T98)")]
    assert repr(fd) == "\n" + expected.replace("id33", "id0") + "\n\n"


def test_seed_with_reference_executor(reference_executor):
    fd = define_seed()
    inputs = seed_inputs()
    check_seed_outputs(fd.execute(inputs), inputs)


def test_seed_with_layoutfuse_executor():
    fd = define_seed()
    inputs = seed_inputs(1)
    check_seed_outputs(fd.execute(inputs), inputs)
    assert_ran_kernels(fd)
    # eight sums of different shapes, each its own kernel (test_segment.py): a reduction
    # kernel, or a pointwise one where every reduced extent is 1 (a sum of one element)
    runs = fd.executor().last_run.segments
    assert len(schedules(fd)) == len(runs) == 8
    kinds = [(r.scheduler, r.problem.family == "pointwise") for r in runs]
    assert all((s == "pointwise") == one for s, one in kinds), kinds
    assert ("reduction", False) in kinds and ("pointwise", True) in kinds, kinds
