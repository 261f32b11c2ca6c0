"""The seed's Thunder fusion (nvFuser issue: reduction scheduler and output allocation
domains) as written, with only the import line changed; its inputs and expected outputs.

``tests/frontend/test_nvfuser_seed.py`` checks that ``repr`` of the definition prints
``nvfuser_fusion_id33`` below back, character for character (id 0).
"""

import torch

from layoutfuse.nvfuser import DataType, FusionDefinition  # noqa: F401 (used by the body)


# nvFuser's own printing, which the test compares to the letter: not reformatted
# fmt: off
def nvfuser_fusion_id33(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 1, -1], contiguity=[None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.sum(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    T4 = fd.ops.permute(T3, dims=[1, 0])
    S5 = fd.define_scalar(1, dtype=DataType.Int)
    S6 = fd.define_scalar(1, dtype=DataType.Int)
    S7 = fd.define_scalar(1, dtype=DataType.Int)
    S8 = fd.define_scalar(2, dtype=DataType.Int)
    S9 = fd.define_scalar(2, dtype=DataType.Int)
    V10 = fd.define_vector([S5, S6, S7, S8, S9], dtype=DataType.Int)
    T11 = fd.ops.reshape(T4, new_shape=V10)
    S12 = fd.define_scalar(1, dtype=DataType.Int)
    S13 = fd.define_scalar(4, dtype=DataType.Int)
    S14 = fd.define_scalar(5, dtype=DataType.Int)
    S15 = fd.define_scalar(2, dtype=DataType.Int)
    S16 = fd.define_scalar(2, dtype=DataType.Int)
    V17 = fd.define_vector([S12, S13, S14, S15, S16], dtype=DataType.Int)
    T18 = fd.ops.broadcast_in_dim(T11, shape=V17, broadcast_dims=[0, 1, 2, 3, 4])
    S19 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S20 = fd.define_scalar(1, dtype=DataType.Int)
    S21 = fd.define_scalar(4, dtype=DataType.Int)
    S22 = fd.define_scalar(5, dtype=DataType.Int)
    S23 = fd.define_scalar(2, dtype=DataType.Int)
    S24 = fd.define_scalar(2, dtype=DataType.Int)
    V25 = fd.define_vector([S20, S21, S22, S23, S24], dtype=DataType.Int)
    T26 = fd.ops.full(shape=V25, fill_value=S19, dtype=DataType.Float)
    T27 = fd.ops.permute(T26, dims=[0, 1, 2, 4, 3])
    T28 = fd.ops.mul(T18, T27)
    T29 = fd.ops.sum(T28, dims=[0, 3, 4], keepdim=False, dtype=DataType.Null)
    S30 = fd.define_scalar(1, dtype=DataType.Int)
    S31 = fd.define_scalar(4, dtype=DataType.Int)
    S32 = fd.define_scalar(5, dtype=DataType.Int)
    S33 = fd.define_scalar(1, dtype=DataType.Int)
    S34 = fd.define_scalar(1, dtype=DataType.Int)
    V35 = fd.define_vector([S30, S31, S32, S33, S34], dtype=DataType.Int)
    T36 = fd.ops.broadcast_in_dim(T29, shape=V35, broadcast_dims=[1, 2])
    S37 = fd.define_scalar(1, dtype=DataType.Int)
    S38 = fd.define_scalar(4, dtype=DataType.Int)
    S39 = fd.define_scalar(5, dtype=DataType.Int)
    V40 = fd.define_vector([S37, S38, S39], dtype=DataType.Int)
    T41 = fd.ops.reshape(T36, new_shape=V40)
    T42 = fd.ops.permute(T41, dims=[2, 0, 1])
    S43 = fd.define_scalar(3, dtype=DataType.Int)
    S44 = fd.define_scalar(5, dtype=DataType.Int)
    S45 = fd.define_scalar(1, dtype=DataType.Int)
    S46 = fd.define_scalar(4, dtype=DataType.Int)
    V47 = fd.define_vector([S43, S44, S45, S46], dtype=DataType.Int)
    T48 = fd.ops.broadcast_in_dim(T42, shape=V47, broadcast_dims=[1, 2, 3])
    T49 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)
    S50 = fd.define_scalar(1, dtype=DataType.Int)
    S51 = fd.define_scalar(5, dtype=DataType.Int)
    S52 = fd.define_scalar(1, dtype=DataType.Int)
    S53 = fd.define_scalar(1, dtype=DataType.Int)
    V54 = fd.define_vector([S50, S51, S52, S53], dtype=DataType.Int)
    T55 = fd.ops.reshape(T49, new_shape=V54)
    S56 = fd.define_scalar(3, dtype=DataType.Int)
    S57 = fd.define_scalar(5, dtype=DataType.Int)
    S58 = fd.define_scalar(1, dtype=DataType.Int)
    S59 = fd.define_scalar(4, dtype=DataType.Int)
    V60 = fd.define_vector([S56, S57, S58, S59], dtype=DataType.Int)
    T61 = fd.ops.broadcast_in_dim(T55, shape=V60, broadcast_dims=[0, 1, 2, 3])
    T62 = fd.ops.mul(T61, T48)
    T63 = fd.ops.sum(T62, dims=[1, 2], keepdim=False, dtype=DataType.Null)
    T64 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T65 = fd.ops.permute(T64, dims=[1, 0, 2])
    S66 = fd.define_scalar(3, dtype=DataType.Int)
    S67 = fd.define_scalar(1, dtype=DataType.Int)
    S68 = fd.define_scalar(1, dtype=DataType.Int)
    S69 = fd.define_scalar(4, dtype=DataType.Int)
    V70 = fd.define_vector([S66, S67, S68, S69], dtype=DataType.Int)
    T71 = fd.ops.reshape(T65, new_shape=V70)
    S72 = fd.define_scalar(3, dtype=DataType.Int)
    S73 = fd.define_scalar(5, dtype=DataType.Int)
    S74 = fd.define_scalar(1, dtype=DataType.Int)
    S75 = fd.define_scalar(4, dtype=DataType.Int)
    V76 = fd.define_vector([S72, S73, S74, S75], dtype=DataType.Int)
    T77 = fd.ops.broadcast_in_dim(T71, shape=V76, broadcast_dims=[0, 1, 2, 3])
    T78 = fd.ops.mul(T77, T48)
    T79 = fd.ops.sum(T78, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    T80 = fd.ops.mul(T61, T77)
    T81 = fd.ops.sum(T80, dims=[0], keepdim=False, dtype=DataType.Null)
    T82 = fd.ops.permute(T81, dims=[1, 2, 0])
    S83 = fd.define_scalar(1, dtype=DataType.Int)
    S84 = fd.define_scalar(4, dtype=DataType.Int)
    S85 = fd.define_scalar(5, dtype=DataType.Int)
    S86 = fd.define_scalar(1, dtype=DataType.Int)
    S87 = fd.define_scalar(1, dtype=DataType.Int)
    V88 = fd.define_vector([S83, S84, S85, S86, S87], dtype=DataType.Int)
    T89 = fd.ops.reshape(T82, new_shape=V88)
    S90 = fd.define_scalar(1, dtype=DataType.Int)
    S91 = fd.define_scalar(4, dtype=DataType.Int)
    S92 = fd.define_scalar(5, dtype=DataType.Int)
    S93 = fd.define_scalar(2, dtype=DataType.Int)
    S94 = fd.define_scalar(2, dtype=DataType.Int)
    V95 = fd.define_vector([S90, S91, S92, S93, S94], dtype=DataType.Int)
    T96 = fd.ops.broadcast_in_dim(T89, shape=V95, broadcast_dims=[0, 1, 2, 3, 4])
    T97 = fd.ops.mul(T96, T27)
    T98 = fd.ops.sum(T97, dims=[0, 1, 2], keepdim=False, dtype=DataType.Null)
    fd.add_output(T79)
    fd.add_output(T63)
    fd.add_output(T98)
# fmt: on


def seed_inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn((24,), dtype=torch.float32, generator=g).as_strided(
            (1, 2, 3, 4), (24, 12, 4, 1)
        ),
        torch.randn((5,), dtype=torch.float32, generator=g).as_strided((1, 1, 5), (5, 5, 1)),
        torch.randn((4,), dtype=torch.float32, generator=g).as_strided((2, 1, 2), (2, 2, 1)),
    ]


def check_seed_outputs(outs, inputs):
    a, b, c = (x.sum() for x in inputs)
    t79, t63, t98 = outs
    assert t79.shape == (5,) and t63.shape == (3, 4) and t98.shape == (2, 2)
    assert all(o.dtype == torch.float32 for o in outs)
    torch.testing.assert_close(t79, (a * c).expand(5))
    torch.testing.assert_close(t63, (b * c).expand(3, 4))
    torch.testing.assert_close(t98, (a * b).expand(2, 2))


def define_seed() -> FusionDefinition:
    with FusionDefinition() as fd:
        nvfuser_fusion_id33(fd)
    return fd
