"""Tests of layoutfuse.testing_api: nvFuser's C++ test API in Python.

Ops run through FusionExecutorCache (generated kernels) and are checked by
``testing.validate`` and by torch expressions written independently of the IR's
reference; ``testing.validate`` itself is checked on hand-made good and bad outputs.
"""

from __future__ import annotations

import pytest
import torch

import layoutfuse.testing_api as api
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.dtypes import DataType, to_torch
from layoutfuse.errors import ArgumentTypeError, DefinitionError, InputLayoutError, LayoutfuseError
from layoutfuse.ir.ops.elementwise import ROW_BY_NAME, DtypeRule
from layoutfuse.reference import evaluate
from layoutfuse.testing_api import Fusion, FusionExecutorCache, FusionGuard, IrBuilder, testing
from layoutfuse.testing_api.validate import default_rtol, reduction_sizes
from support.execution import assert_ran_kernels, schedules

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def run_unary(build, x: torch.Tensor, static: bool = False):
    """Build ``build(tv)`` over one input like ``x``, run it, validate it, compile its kernels
    for sm_90, return the outputs.

    ``tv`` has symbolic extents, or static ones with ``static``.
    """
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = (
            api.make_contig_concrete_tensor(list(x.shape))
            if static
            else api.make_contig_tensor(x.dim())
        )
        fusion.add_input(tv)
        outs = build(tv)
        for out in outs if isinstance(outs, tuple) else (outs,):
            fusion.add_output(out)
    fec = FusionExecutorCache(fusion)
    results = fec.run_fusion_with_inputs([x])
    assert isinstance(results, list) and fec.fusion() is fusion
    testing.validate(fusion, results, [x])
    for art in compile_last_run(fec._executor):
        assert f".entry {art.name}" in art.ptx, f"{art.name}: no kernel entry"
    return results


# --- tensor makers --------------------------------------------------------------------------------
MAKERS = [  # maker, argument, static shape, contiguity in allocation order
    (api.make_contig_tensor, 3, (None, None, None), (True, True, True)),
    (api.make_symbolic_tensor, 2, (None, None), (False, False)),
    (api.make_symbolic_tensor, [4, 1, 5], (None, 1, None), (False, None, False)),
    (api.make_concrete_tensor, [4, 1, 5], (4, 1, 5), (False, None, False)),
    (api.make_contig_concrete_tensor, [4, 1, 5], (4, 1, 5), (True, None, True)),
    (api.make_contig_concrete_tensor, [-1, 3], (None, 3), (True, True)),
]


@pytest.mark.parametrize("maker, arg, shape, contiguity", MAKERS)
def test_makers(maker, arg, shape, contiguity):
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = maker(arg, DataType.Half)
    assert tv.fusion is fusion and tv.dtype is DataType.Half
    assert tv.static_shape == shape
    assert [d.is_broadcast for d in tv.logical] == [e == 1 for e in shape]
    assert tv.allocation_order == tuple(range(len(shape)))
    assert tv.contiguity == contiguity


@pytest.mark.parametrize("maker", [api.make_symbolic_tensor, api.make_contig_tensor])
def test_makers_carry_contiguity_to_the_executor(maker):
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = maker(2)
        fusion.add_input(tv)
        fusion.add_output(api.sum(tv, [1]))
    strided = torch.randn(6, 8, device=DEVICE)[:, ::2]
    fec = FusionExecutorCache(fusion)
    if maker is api.make_symbolic_tensor:
        (out,) = fec.run_fusion_with_inputs([strided])
        torch.testing.assert_close(out, strided.sum(1))
    else:
        with pytest.raises(InputLayoutError):
            fec.run_fusion_with_inputs([strided])


@pytest.mark.parametrize("bad", [[2, -3], [2.0], [True]])
def test_makers_reject_bad_shapes(bad):
    with FusionGuard(Fusion()), pytest.raises(DefinitionError):
        api.make_concrete_tensor(bad)


def test_allocation_domain_accepts_reduction_axes():
    with FusionGuard(Fusion()):
        tv = api.sum(api.make_contig_concrete_tensor([2, 3, 4]), [0, 1])
        tv.set_allocation_domain([tv.axis(2), tv.axis(0), tv.axis(1)], True)
        assert tv.allocation_order == (0,) and tv.contiguity == (True,)
        tv.set_allocation_domain([tv.axis(2)], True)  # reduction axes may be left out
        assert tv.allocation_order == (0,)
        x = api.make_contig_concrete_tensor([2, 3])
        with pytest.raises(DefinitionError):
            x.set_allocation_domain([x.axis(1)], True)


def test_allocation_domain_takes_axes_not_positions():
    """Before: ``AttributeError: 'int' object has no attribute 'uid'``."""
    with FusionGuard(Fusion()):
        tv = api.make_contig_concrete_tensor([2, 3, 4, 5])
        with pytest.raises(ArgumentTypeError) as info:
            tv.set_allocation_domain([0, 2, 1, 3], True)
    assert str(info.value) == (
        f"set_allocation_domain on T{tv.index}: ids[0] must be an "
        f"IterDomain (tv.axis(i)), got int 0; pass the axes, "
        f"[tv.axis(0), ...], not their positions"
    )


@pytest.mark.parametrize(
    "contiguity, where",
    [
        (
            "yes",
            "contiguity must be a bool or a list of bools and Nones (in allocation order), "
            "got str 'yes'",
        ),
        ([True, "yes", True], "contiguity[1] must be a bool or None, got str 'yes'"),
        ([True, 1, True], "contiguity[1] must be a bool or None, got int 1"),
    ],
)
def test_allocation_domain_contiguity_is_bools(contiguity, where):
    """Before: ``'yes'`` was read as three characters at rank 3 and accepted."""
    with FusionGuard(Fusion()):
        tv = api.make_contig_concrete_tensor([2, 3, 4])
        with pytest.raises(ArgumentTypeError) as info:
            tv.set_allocation_domain([tv.axis(0), tv.axis(1), tv.axis(2)], contiguity)
    assert str(info.value) == f"set_allocation_domain on T{tv.index}: {where}"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda tv: api.sum(tv, []), "sum: dims is empty: no reduction axis specified"),
        (lambda tv: api.welford(tv, []), "welford: dims is empty: no reduction axis specified"),
        (lambda tv: api.variance(tv, [], 1), "var: dims is empty: no reduction axis specified"),
        (lambda tv: api.mean(tv, 1.5), "sum: dims must be an int or a list of ints, got float 1.5"),
        (
            lambda tv: api.permute(tv, 1),
            "permute: dims must be a list of ints, got int 1; for one dim pass [1]",
        ),
        (
            lambda tv: api.expand(tv, [-5, 3]),
            "expand: shape [-5, 3] has the extent -5 at index 0; "
            "extents are >= 0 or -1 (keep the input's extent)",
        ),
        (
            lambda tv: api.expand(tv, [2.5, 3]),
            "expand: shape[0] must be an int or an integer Scalar, got float 2.5",
        ),
        (
            lambda tv: api.squeeze(tv, [5]),
            "squeeze: dims [5]: dim 5 is out of range for an input of rank 2",
        ),
        (
            lambda tv: api.add(tv, torch.ones(7)),
            "add: cannot use torch.Tensor(shape=[7], dtype=torch.float32, strides=[1]",
        ),
    ],
)
def test_op_argument_errors_name_the_op_and_argument(call, message):
    with FusionGuard(Fusion()):
        tv = api.make_contig_tensor(2)
        with pytest.raises(LayoutfuseError) as info:
            call(tv)
    assert str(info.value).startswith(message)


# --- ops ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ROW_BY_NAME))
def test_every_pointwise_row_is_a_function(name):
    row = ROW_BY_NAME[name]
    dtype = DataType.Int if row.rule is DtypeRule.INTEGRAL else DataType.Float
    if name == "imag":  # defined for complex operands only
        dtype = DataType.ComplexFloat
    with FusionGuard(Fusion()):
        operands = [api.make_contig_tensor(2, dtype) for _ in range(row.arity)]
        for k in row.scalar_operands:  # an alpha, threshold's scalars: Scalars (as in nvFuser)
            operands[k] = 1.0
        out = getattr(api, name)(*operands)
        assert out.definition.op.name == name and out.ndim == 2
        with pytest.raises(DefinitionError):
            getattr(api, name)(*operands, operands[0])


REDUCTIONS = [
    (api.sum, lambda x, dims, k: x.sum(dims, keepdim=k)),
    (api.max, lambda x, dims, k: x.amax(dims, keepdim=k)),
    (api.min, lambda x, dims, k: x.amin(dims, keepdim=k)),
    (api.prod, lambda x, dims, k: x.prod(dims[0], keepdim=k)),
]


@pytest.mark.parametrize("keep_dim", [False, True])
@pytest.mark.parametrize("op, torch_op", REDUCTIONS, ids=["sum", "max", "min", "prod"])
def test_reductions(op, torch_op, keep_dim):
    x = torch.randn(3, 4, 5, device=DEVICE)
    dims = [1] if op is api.prod else [0, 2]
    (out,) = run_unary(lambda tv: op(tv, dims, keep_dim), x)
    torch.testing.assert_close(out, torch_op(x, dims, keep_dim))


def test_reduction_dtype_and_binary_max_min():
    x = torch.randn(4, 6, device=DEVICE)
    out, hi, lo = run_unary(
        lambda tv: (
            api.sum(tv, [1], dtype=DataType.Double),
            api.max(tv, api.neg(tv)),
            api.min(tv, api.neg(tv)),
        ),
        x,
    )
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, x.double().sum(1))
    torch.testing.assert_close(hi, x.abs())
    torch.testing.assert_close(lo, -x.abs())


def test_shape_ops():
    x = torch.randn(2, 3, 4, device=DEVICE)
    outs = run_unary(
        lambda tv: (
            api.permute(tv, [2, 0, 1]),
            api.permute(tv, {0: 2}),  # old2new: dim 0 goes last
            api.reshape(tv, [2, 3, 4], [6, 4]),
            api.reshape(tv, [4, 6]),
            api.squeeze(api.broadcast(tv, [False, True, False, False]), [1]),
            api.squeeze(
                api.broadcast(tv, [True, False, False, False]), [True, False, False, False]
            ),
            api.expand(api.broadcast(tv, [False, True, False, False]), [-1, 5, -1, -1]),
            api.set(tv),
        ),
        x,
        static=True,
    )
    expected = [
        x.permute(2, 0, 1),
        x.permute(1, 2, 0),
        x.reshape(6, 4),
        x.reshape(4, 6),
        x,
        x,
        x[:, None].expand(2, 5, 3, 4),
        x,
    ]
    for out, exp in zip(outs, expected, strict=True):
        torch.testing.assert_close(out, exp)


def test_reshape_checks_original_sizes():
    with FusionGuard(Fusion()):
        tv = api.make_contig_concrete_tensor([2, 3])
        with pytest.raises(DefinitionError, match="original_sizes"):
            api.reshape(tv, [3, 2], [6])


def test_statistics():
    x = torch.randn(3, 8, device=DEVICE)

    def build(tv):
        var_c0, mean_kept = api.var_mean(tv, [1], 0, True)
        avg, var_sum, n = api.welford(tv, [1])
        return api.variance(tv, [1], True), var_c0, mean_kept, api.mean(tv, [1]), avg, var_sum, n

    var, var_c0, mean_kept, mean, avg, var_sum, n = run_unary(build, x)
    torch.testing.assert_close(var, x.var(1, correction=1))
    torch.testing.assert_close(var_c0, x.var(1, correction=0, keepdim=True))
    torch.testing.assert_close(mean_kept, x.mean(1, keepdim=True))
    torch.testing.assert_close(mean, x.mean(1))
    torch.testing.assert_close(avg, x.mean(1))
    torch.testing.assert_close(var_sum, x.var(1, correction=0) * 8)
    assert n.tolist() == [8, 8, 8]


def test_creation_casts_and_scalars():
    x = torch.randn(2, 3, device=DEVICE)

    def build(tv):
        scale = IrBuilder.create_val(2.0)
        return (
            api.add(tv, api.full([2, 3], scale, DataType.Float)),
            api.iota(5, 1, 2, DataType.Int),
            api.mul(api.ones([2, 3], DataType.Float), 3),
            api.cast(tv, DataType.Half),
            api.cast_op(DataType.Double, tv),
        )

    added, iota, ones, half, double = run_unary(build, x, static=True)
    torch.testing.assert_close(added, x + 2)
    assert iota.tolist() == [1, 3, 5, 7, 9]
    assert ones.tolist() == [[3.0] * 3] * 2
    assert half.dtype == torch.float16 and double.dtype == torch.float64


@pytest.mark.parametrize(
    "args, dtype, value",
    [
        ((1.0,), DataType.Double, 1.0),
        ((2,), DataType.Int, 2),
        ((True,), DataType.Bool, True),
        ((1, DataType.Float), DataType.Float, 1.0),
        ((DataType.Half,), DataType.Half, None),
    ],
)
def test_ir_builder_create_val(args, dtype, value):
    with FusionGuard(Fusion()):
        s = IrBuilder.create_val(*args)
    assert s.dtype is dtype and s.value == value and type(s.value) is type(value)


def test_symbolic_scalar_input():
    fusion = Fusion()
    with FusionGuard(fusion):
        tv, s = api.make_contig_tensor(1), IrBuilder.create_val(DataType.Double)
        fusion.add_input(tv)
        fusion.add_input(s)
        fusion.add_output(api.mul(tv, s))
        with pytest.raises(DefinitionError):
            IrBuilder.create_val()
    x = torch.randn(5, device=DEVICE)
    (out,) = FusionExecutorCache(fusion).run_fusion_with_inputs([x, 2.5])
    torch.testing.assert_close(out, x * 2.5)


def test_executor_cache_reports_the_last_run():
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = api.make_contig_tensor(2)
        fusion.add_input(tv)
        fusion.add_output(api.sum(tv, [1]))
    fec = FusionExecutorCache(fusion)
    assert schedules(fec) == [] and fec.last_triton_code() is None
    fec.run_fusion_with_inputs([torch.randn(3, 4, device=DEVICE)])
    assert_ran_kernels(fec)
    with pytest.raises(DefinitionError):
        FusionExecutorCache("not a fusion")


# --- testing.validate -----------------------------------------------------------------------------
def pinned_transpose_fusion() -> Fusion:
    """sum over dim 0 of a [4, 3, 5] tensor, output pinned column-major."""
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = api.make_contig_concrete_tensor([4, 3, 5])
        out = api.sum(tv, [0])
        out.set_allocation_domain([out.axis(2), out.axis(0), out.axis(1)], True)
        fusion.add_input(tv)
        fusion.add_output(out)
    return fusion


def test_validate_checks_values_shapes_dtypes_and_counts():
    fusion, x = pinned_transpose_fusion(), torch.randn(4, 3, 5)
    good = x.sum(0).t().contiguous().t()  # dense in the allocation order {axis2, axis1}
    testing.validate(fusion, [good], [x])
    wrong = good.clone()
    wrong[1, 2] += 1e-3
    with pytest.raises(
        AssertionError,
        match=r"output 0 .* max abs error .* at index \(1, 2\)"
        r".*tolerance: atol=",
    ):
        testing.validate(fusion, [wrong], [x])
    cases = [
        ([good.contiguous()], "strides"),
        ([good.t()], "shape"),
        ([good.double()], "dtype"),
        ([good, good], "returns 1 outputs"),
    ]
    for outputs, message in cases:
        with pytest.raises(AssertionError, match=message):
            testing.validate(fusion, outputs, [x])
    testing.validate(fusion, [wrong], [x], rtol=0.0, atol=1e-2)  # caller's tolerance wins


def neg_fusion(dtype: DataType) -> Fusion:
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = api.make_contig_tensor(1, dtype)
        fusion.add_input(tv)
        fusion.add_output(api.neg(tv))
    return fusion


@pytest.mark.parametrize(
    "dtype, rel_error, ok",
    [
        (DataType.Float, 2e-6, True),
        (DataType.Float, 1e-3, False),
        (DataType.Half, 4e-3, True),
        (DataType.BFloat16, 1e-2, True),
        (DataType.Half, 5e-2, False),
        (DataType.Int, 0, False),
    ],
)
def test_validate_tolerance_follows_the_dtype(dtype, rel_error, ok):
    x = (torch.rand(64) * 100 + 1).to(to_torch(dtype))
    off = (-x.double() * (1 + rel_error)).to(x.dtype)
    if dtype is DataType.Int:
        off[3] += 1
    if ok:
        testing.validate(neg_fusion(dtype), [off], [x])
    else:
        with pytest.raises(
            AssertionError, match="exact match" if dtype is DataType.Int else "tolerance: atol="
        ):
            testing.validate(neg_fusion(dtype), [off], [x])


def test_validate_nans_must_match():
    x = torch.tensor([1.0, float("nan"), float("inf")])
    testing.validate(neg_fusion(DataType.Float), [-x], [x])
    for wrong in ([-1.0, 0.0, -float("inf")], [-1.0, float("nan"), float("inf")]):
        with pytest.raises(AssertionError, match="differs"):
            testing.validate(neg_fusion(DataType.Float), [torch.tensor(wrong)], [x])


def test_tolerance_grows_with_the_reduction_size():
    fusion = Fusion()
    with FusionGuard(fusion):
        tv = api.make_contig_concrete_tensor([4, 3, 5])
        twice = api.sum(api.sum(tv, [0]), [0])
        fusion.add_input(tv)
        fusion.add_output(twice)
    env = evaluate(fusion, [torch.randn(4, 3, 5)])
    assert reduction_sizes(fusion, env)[id(twice)] == 12
    assert default_rtol(DataType.Float) < default_rtol(DataType.Float, 4096) < 1e-4
    assert default_rtol(DataType.Half, 1 << 20) < 1.1e-2
    assert default_rtol(DataType.Int, 1 << 20) == 0


def test_test_validate_alias_is_not_collected():
    assert api.test_validate is testing.validate and api.test_validate.__test__ is False
