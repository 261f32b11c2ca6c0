"""benchmarks.tune: each variant reaches the kernel that runs (CPU, tiny shapes, a fixed timer)."""

from __future__ import annotations

import json

import pytest

import layoutfuse.nvfuser as nvf
from benchmarks import tune
from benchmarks.reference import make_inputs, reference
from layoutfuse.schedulers import normalization as nm
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers import reduction as rd
from layoutfuse.schedulers.tuning import DEFAULT

TRANSPOSE = "permute_2d_mem01_to_mem10_bfloat16"
SOFTMAX = "norm_softmax_colmajor_reduce_outer_float32"


def fixed_ms(fn):
    fn()
    return 1.0


def test_cases_by_name_and_filter():
    cases = tune.find_cases([TRANSPOSE], ["permute_3d_mem012_to_mem120"])
    assert [c.name for c in cases] == [
        TRANSPOSE,
        "permute_3d_mem012_to_mem120_float32",
        "permute_3d_mem012_to_mem120_bfloat16",
    ]
    assert tune.find_cases(["sweep_mem012_sum0"], [])[0].op == "sum"
    # sibling sums of the normalization suite: their reduction kernel takes the variants
    assert tune.find_cases(["norm_varsums_colmajor_reduce_outer_float32"], [])[0].op == "var_sums"
    # softmax and layer norm: their NormalizationParams take the variants
    assert (
        tune.scheduler_of(tune.find_cases(["norm_softmax_colmajor_reduce_outer_float32"], [])[0])
        is nm
    )
    with pytest.raises(SystemExit, match="unknown cases"):
        tune.find_cases(["no_such_case"], [])


def test_parse_variant():
    assert tune.parse_variant("block_x=128,block_y=64,num_warps=8") == dict(
        block_x=128, block_y=64, num_warps=8
    )
    assert tune.parse_variant("") == {}


@pytest.mark.parametrize("var", tune.VARIANTS["transpose"][:4])
def test_transpose_variants_reach_the_kernel(var):
    (case,) = tune.find_cases([TRANSPOSE], [])
    case = case.shrunk(4096)
    inputs = make_inputs(case, "cpu")
    heuristics = pw.heuristics
    params, ms, _ = tune.run_variant(nvf, case, inputs, var, fixed_ms, reference(case, inputs))
    assert ms == 1.0 and tune.kind_of(params) == "transpose"
    assert all(getattr(params, field) == value for field, value in var.items())
    assert pw.heuristics is heuristics  # restored


@pytest.mark.parametrize(
    "name,scheduler",
    [("r1_013", "reduction"), ("r2_040", "normalization"), ("r1_021", "normalization")],
)
def test_variants_reach_the_scheduler_that_planned_a_random_case(name, scheduler):
    """A max (the reduction scheduler's), a var_mean whose rows fit (the normalization
    scheduler's: two outputs, both checked) and a log_softmax: the variant overrides the
    params of the scheduler that planned the case. (By op name, a max's and a
    log_softmax's variants went to the pointwise scheduler and never reached a kernel.)"""
    (case,) = tune.find_cases([name], [])
    case = case.shrunk(100000)
    inputs = make_inputs(case, "cpu")
    nvf.FusionCache.reset()
    probe = tune.define_fusion(nvf, case)
    probe.execute(inputs)
    planned = tune.planned_scheduler(probe.last_schedule())
    assert planned == scheduler
    var = dict(num_warps=8)
    params, _, _ = tune.run_variant(
        nvf, case, inputs, var, fixed_ms, reference(case, inputs), scheduler=planned
    )
    main = next(
        p for p in (params if isinstance(params, list) else [params]) if p.scheduler == planned
    )
    assert main.num_warps == 8, main


def test_reduction_variant_reaches_the_kernel():
    (case,) = tune.find_cases(["sweep_mem012_sum0"], [])
    case = case.shrunk(8192)
    inputs = make_inputs(case, "cpu")
    heuristics = rd.heuristics
    var = dict(block_x=128, block_r=32, num_warps=4)
    params, _, _ = tune.run_variant(nvf, case, inputs, var, fixed_ms, reference(case, inputs))
    assert tune.kind_of(params) == "outer" and params.block_x == 128 and params.block_r == 32
    assert rd.heuristics is heuristics


@pytest.mark.parametrize(
    "var", [dict(mode="looped", block_x=16, block_r=32, num_warps=4), dict(block_x=8, num_warps=2)]
)
def test_normalization_variant_reaches_the_kernel(var):
    """A variant of a softmax over strided columns overrides its NormalizationParams: the
    looped kernel or a narrower persistent tile runs, and its result is checked."""
    (case,) = tune.find_cases(["norm_softmax_colmajor_reduce_outer_float32"], [])
    case = case.shrunk(1024)
    inputs = make_inputs(case, "cpu")
    heuristics = nm.heuristics
    params, _, _ = tune.run_variant(nvf, case, inputs, var, fixed_ms, reference(case, inputs))
    assert tune.kind_of(params) == "normalization"
    assert all(getattr(params, field) == value for field, value in var.items())
    assert nm.heuristics is heuristics
    assert f"bx={var['block_x']}" in tune.describe(params)


def test_parse_tuning():
    assert tune.parse_tuning("") == DEFAULT
    assert tune.parse_tuning(
        "normalization.max_tile=64,reduction.ticket_steps=0"
    ) == DEFAULT.with_fields(normalization=dict(max_tile=64), reduction=dict(ticket_steps=0))
    assert tune.parse_tuning("pointwise.warps=4096:8/0:2").pointwise.warps == ((4096, 8), (0, 2))
    assert tune.parse_tuning("measure.min_l2=0.05").measure.min_l2 == 0.05
    for bad in ("nosuch.max_tile=1", "normalization.no_such_knob=1", "normalization.max_tile"):
        with pytest.raises(ValueError):
            tune.parse_tuning(bad)


def test_a_tuning_variant_reaches_the_kernel():
    """A softmax over strided columns whose rows no longer fit a tile (max_tile=64): the
    segmented plan runs (its reduction kernel's params come back), checked against the
    reference; the defaults keep the persistent normalization kernel."""
    (case,) = tune.find_cases([SOFTMAX], [])
    case = case.shrunk(1024)
    inputs = make_inputs(case, "cpu")
    ref = reference(case, inputs)
    params, _, _ = tune.run_variant(nvf, case, inputs, {}, fixed_ms, ref)
    assert (params.scheduler, params.mode) == ("normalization", "persistent")
    tuning = tune.parse_tuning("normalization.max_tile=64")
    params, _, _ = tune.run_variant(nvf, case, inputs, {}, fixed_ms, ref, tuning=tuning)
    assert params.scheduler == "reduction" and tune.kind_of(params) == "outer", params


def test_main_writes_a_row_per_tuning(tmp_path, capsys):
    out = tmp_path / "tune.json"
    argv = [
        SOFTMAX,
        "--device",
        "cpu",
        "--shrink",
        "1024",
        "--out",
        str(out),
        "--tuning",
        "",
        "--tuning",
        "normalization.max_tile=64",
    ]
    assert tune.main(argv) == 0
    doc = json.loads(out.read_text())
    assert [(r["tuning"], r["variant"]) for r in doc["rows"]] == [
        ("", {}),
        ("normalization.max_tile=64", {}),
    ]
    text = capsys.readouterr().out
    assert "[defaults] inner persistent" in text or "[defaults] outer persistent" in text
    assert "[normalization.max_tile=64] outer bx=" in text  # the segmented plan's reduction
    with pytest.raises(SystemExit):
        tune.main([SOFTMAX, "--device", "cpu", "--tuning", "normalization.no_such_knob=1"])


def test_a_wrong_result_fails_the_variant():
    (case,) = tune.find_cases([TRANSPOSE], [])
    case = case.shrunk(4096)
    inputs = make_inputs(case, "cpu")
    with pytest.raises(AssertionError):
        tune.run_variant(nvf, case, inputs, {}, fixed_ms, reference(case, inputs) + 1)


def test_main_writes_a_row_per_variant(tmp_path, capsys):
    out = tmp_path / "tune.json"
    argv = [
        TRANSPOSE,
        "--device",
        "cpu",
        "--shrink",
        "4096",
        "--out",
        str(out),
        "--variant",
        "block_x=64,block_y=64,num_warps=8",
        "--variant",
        "num_warps=99,x=1",
    ]
    assert tune.main(argv) == 0
    doc = json.loads(out.read_text())
    assert [r["variant"] for r in doc["rows"]] == [dict(block_x=64, block_y=64, num_warps=8)]
    text = capsys.readouterr().out
    assert "transpose bx=64 by=64 w=8" in text and "failed" in text  # a bad variant is reported


def test_profile_is_asked_only_on_cuda(monkeypatch, capsys):
    """``--profile`` on the CPU times the variant without the profiler (CUDA only)."""
    called = []
    monkeypatch.setattr(tune, "kernel_times", lambda *a, **k: called.append(a) or "")
    argv = [TRANSPOSE, "--device", "cpu", "--shrink", "4096", "--profile", "--variant", ""]
    assert tune.main(argv) == 0 and not called
    assert "transpose" in capsys.readouterr().out


def test_profile_tool_rejects_a_filter_that_matches_nothing():
    from benchmarks import profile

    with pytest.raises(SystemExit):
        profile.main(["normalization", "--filter", "no-such-case"])
