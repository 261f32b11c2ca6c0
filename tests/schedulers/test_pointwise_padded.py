"""A short stride-1 group continued at its power-of-two extent
(``PointwiseTuning.padded_continuation``, a measured alternative).

Three channels of a padded four (a slice ``[..., :3]`` of a channels-last tensor with
four): the next group's stride is 4, not 3, so the group is not continued exactly, and
the transposed tile read 3 elements of every row apart (r1_036: a bf16 copy of [343288,
3, 14, 14] at 24% of the copy bandwidth, as eager and torch.compile). With the knob, X
spans the 3 (as 4, a lane masked) and the group continuing it at 4, so a tile row is
contiguous. The tests check the tile each way, values and strides against torch on the
interpreter across dtypes and the transpose's and the plain flattening's paths, the
candidates the measured choice times, and compile the padded tile for sm_90.
"""

from __future__ import annotations

import pytest
import torch
from test_pointwise_whole_y import _copy

from layoutfuse.analysis.device import H200
from layoutfuse.codegen.hopper_check import compile_last_run
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers import measure
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured

pytestmark = pytest.mark.usefixtures("kernel_cache_in_tmp")

ON = DEFAULT.with_fields(pointwise=dict(padded_continuation=1, transpose_fill=0))
OFF = DEFAULT.with_fields(pointwise=dict(padded_continuation=0, transpose_fill=0))


def _padded(n: int, h: int, w: int, dtype, device=None, c: int = 3) -> torch.Tensor:
    """[n, c, h, w] laid out w, n, h, c (c innermost) with c padded to a power of two
    ``pc``: strides (pc h, 1, pc, pc h n)."""
    device = device or torch.get_default_device()
    pc = 1 << (c - 1).bit_length()
    if str(device) == "meta":
        full = torch.empty(w, n, h, pc, dtype=dtype, device="meta")
    else:
        g = torch.Generator().manual_seed(n * 31 + h)
        full = torch.randn(w, n, h, pc, generator=g).to(dtype).to(device)
    x = full[..., :c].permute(1, 3, 2, 0)  # the slice of the dense tensor: strides kept
    assert x.shape == (n, c, h, w) and x.stride()[1] == 1 and x.stride()[2] == pc
    return x


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float16])
@pytest.mark.parametrize(
    "stride_order",
    [[1, 0, 2, 3], [2, 0, 1, 3], [0, 1, 2, 3]],
    ids=["c_then_n", "c_then_h", "n_innermost"],
)
@pytest.mark.parametrize("c", [3, 5])
def test_a_padded_group_flattens_with_its_continuation(dtype, stride_order, c):
    """r1_036's layout (C innermost and padded to 4, then H, then N; and 5 of 8) stored with C
    innermost then N (the shared short group) and N innermost (a transpose whose X is the
    input's C): with the knob X spans C, as 4, and H; stored C then H (a plain copy, whose
    tile rows already cover the padding) X stays C alone. Torch's values and strides
    each way."""
    x = _padded(37, 14, 5, dtype, c=c)
    outer_to_inner = sorted(range(4), key=lambda d: -stride_order[d])
    dense = torch.empty([x.shape[d] for d in outer_to_inner]).permute(
        *[outer_to_inner.index(d) for d in range(4)]
    )
    tiles = {}
    for name, tuning in (("on", ON), ("off", OFF)):
        fd, tiles[name] = _copy(x, stride_order, tuning)  # torch's values
        (out,) = fd.execute([x])
        assert out.stride() == dense.stride(), (out.stride(), dense.stride())
    on, off = tiles["on"], tiles["off"]
    if stride_order != [2, 0, 1, 3]:  # a transpose: X spans C (as 4) and H with the knob
        assert off.gx2 is None, off
        assert on.transpose and on.gx == 0 and on.gx2 is not None, on
        assert on.split_x == x.stride(2), on  # C's extent padded: 4 or 8
    else:  # a plain copy (its rows already cover the padding): X is C alone either way
        assert on.gx2 is None and off.gx2 is None, (on, off)


def test_the_padded_tile_is_a_measured_candidate_and_compiles_for_sm90():
    """At r1_036's size, on an H200, the rule's tile reads C alone along X; the padded
    tile (X spanning C as 4 and H) is among the candidates, and compiles for sm_90."""
    big = _padded(343288, 14, 14, torch.bfloat16, device="meta")
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.set(fd.from_pytorch(big)), stride_order=[1, 0, 2, 3])
    (seg,) = configured(fd, target=H200).executor().plan([big]).segments
    t = pw.DEFAULT_TUNING
    cands = measure.candidates(pw.heuristics, seg.problem, H200, t, t.alternatives, 4)
    assert cands[0] == seg.params and cands[0].gx2 is None
    assert any(c.gx2 is not None and c.split_x == 4 for c in cands[1:]), cands
    fd, params = _copy(_padded(37, 14, 5, torch.bfloat16), [1, 0, 2, 3], ON)
    assert params.split_x == 4
    compile_last_run(fd.executor())
