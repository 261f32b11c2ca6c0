"""``layoutfuse.use_as_nvfuser()``: the one line that makes ``import nvfuser`` (and so
Thunder's nvFuser executor) run on layoutfuse, and the rule behind ``version()``: the
highest nvFuser version every op of which, as Thunder calls them, ``fd.ops`` has."""

from __future__ import annotations

import sys

import pytest
import torch

import layoutfuse
import layoutfuse.nvfuser as lf_nvfuser
from layoutfuse.frontend.nvfuser.version import (
    GATES,
    MODULES_PROVIDED,
    missing,
    operator_names,
    supported_version,
    version,
)
from layoutfuse.nvfuser import DataType

NAMES = ("nvfuser", "nvfuser._C", "nvfuser.pytorch_utils", "nvfuser_direct")


@pytest.fixture
def installed():
    saved = {n: sys.modules[n] for n in NAMES if n in sys.modules}
    try:
        yield layoutfuse.use_as_nvfuser()
    finally:
        for n in NAMES:
            sys.modules.pop(n, None)
        sys.modules.update(saved)


def test_import_nvfuser_gives_layoutfuse(installed):
    import nvfuser
    from nvfuser import DataType as NvDataType
    from nvfuser import FusionDefinition, compute_tensor_descriptor

    assert nvfuser is lf_nvfuser is installed and NvDataType is DataType
    with pytest.raises(ImportError):
        import nvfuser_direct  # noqa: F401  (Thunder would prefer it; it is not ours)
    # what Thunder 0.2.6 calls on the module
    assert nvfuser.version() == version() and isinstance(nvfuser._C.Scalar, type)
    nvfuser.FusionCache.reset()
    x = torch.randn(3, 1, 4).permute(2, 0, 1)
    sizes, strides = x.shape, x.stride()
    assert compute_tensor_descriptor(sizes, strides) == lf_nvfuser.compute_tensor_descriptor(
        sizes, strides
    )
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t))
    a = torch.randn(2, 3)
    (out,) = fd.execute([a], device=a.device, _enable_options=[], _disable_options=[])
    torch.testing.assert_close(out, -a)


def test_dtypes_thunder_maps_at_import_exist():
    """Thunder's _lcdtype_to_nvdtype_map reads these at import (below 0.2.27)."""
    names = ["ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "BFloat16", "Int"]
    names += ["Int32", "Bool", "Null"]
    assert [n for n in names if not hasattr(DataType, n)] == []


def test_version_is_the_highest_gate_whose_ops_all_exist():
    ops, dtypes = operator_names(), set(DataType.__members__)
    assert version() == supported_version(ops, dtypes, MODULES_PROVIDED)
    k = [g.version for g in GATES].index(str(version()))
    for gate in GATES[: k + 1]:
        assert missing(gate, ops, dtypes, MODULES_PROVIDED) == [], gate
    if k + 1 < len(GATES):
        assert missing(GATES[k + 1], ops, dtypes, MODULES_PROVIDED), GATES[k + 1]
    # the ops the gates name are the ones Thunder calls: the reductions and pointwise ops
    # are all there (fd.ops is generated from the rows), an op of a gate above is not
    assert {"sum", "add", "cast", "broadcast_in_dim"} <= ops


def test_version_rule_is_cumulative_and_rises_with_the_ops():
    base = {"sum", "add"}
    assert supported_version(base, set()) == "0.2.23"
    assert supported_version(base | {"index_select", "embedding_fwd"}, set()) == "0.2.25"
    sdpa = {"sdpfa_fwd", "sdpfa_bwd"}
    # 0.2.27's ops without 0.2.25's: still 0.2.23 (a version promises every lower gate)
    assert supported_version(base | sdpa, {"UInt64"}) == "0.2.23"
    embedding = {"index_select", "embedding_fwd"}
    assert supported_version(base | embedding | sdpa, set()) == "0.2.25"  # no UInt64
    assert supported_version(base | embedding | sdpa, {"UInt64"}) == "0.2.27"
    everything = {n for g in GATES for n in g.ops} | base
    every_dtype = {n for g in GATES for n in g.dtypes}
    # without nvfuser_direct Thunder cannot import at 0.2.28: the version stays below
    assert supported_version(everything, every_dtype, frozenset()) == "0.2.27"
    assert supported_version(everything, every_dtype, {"nvfuser_direct"}) == GATES[-1].version
    versions = [tuple(map(int, g.version.split("."))) for g in GATES]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
