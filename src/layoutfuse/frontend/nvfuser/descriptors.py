"""nvFuser's tensor descriptors: sizes and strides to (contiguity, stride_order), and back.

Conventions (from nvFuser's ``python_utils.cpp`` and ``TensorDomain``):

* ``shape``: -1 symbolic, 1 broadcast, 0 zero-size, >1 static.
* ``stride_order[i]`` ranks logical dim ``i`` by stride, 0 = innermost; the
  allocation domain (outermost first) is ``alloc[rank-1-stride_order[i]] = logical[i]``.
* ``contiguity`` is indexed in allocation order: True (dense with the next inner
  non-broadcast dim; stride 1 for the innermost), False (any stride), None
  (broadcast: required on size-1 dims; on any other dim it marks an expanded
  broadcast, which has stride 0).
"""

from __future__ import annotations

from ...dtypes import DataType
from ...errors import ArgumentTypeError, DefinitionError, describe
from ...ir import Fusion, IterDomain, TensorView
from ...ir.ops.shape import stride_order_to_allocation
from ...runtime.allocate import dense_strides as _dense_in_order


def compute_contiguity(sizes, strides) -> list[bool | None]:
    """Contiguity in logical order (nvFuser's ``computeContiguity``); None marks broadcasts."""
    sizes, strides = list(sizes), list(strides)
    if len(sizes) != len(strides):
        raise DefinitionError(
            "compute_contiguity: sizes and strides must have the same number "
            f"of dimensions, got {len(sizes)} and {len(strides)}"
        )

    def not_broadcast(i):
        return strides[i] != 0 and sizes[i] != 1

    contiguity: list[bool | None] = [None] * len(sizes)
    last = len(sizes) - 1
    while last >= 0 and not not_broadcast(last):
        last -= 1
    if last >= 0:
        contiguity[last] = strides[last] == 1
    i = 0
    while i < last:
        if not_broadcast(i):
            left = i
            i += 1
            while i <= last and not not_broadcast(i):
                i += 1
            contiguity[left] = strides[left] == strides[i] * sizes[i]
        else:
            i += 1
    return contiguity


def compute_tensor_descriptor(sizes, strides) -> tuple[list[bool | None], list[int]]:
    """(contiguity in allocation order, stride_order) of a strided tensor.

    Dims are ordered by decreasing stride (stable); stride-0 dims keep their
    logical position. Mirrors nvFuser's ``computeTensorDescriptor``.
    """
    sizes, strides = list(sizes), list(strides)
    rank = len(sizes)
    if rank != len(strides):
        raise DefinitionError(
            "compute_tensor_descriptor: sizes and strides must have the same "
            f"number of dimensions, got {rank} and {len(strides)}"
        )
    for i, st in enumerate(strides):
        if st < 0:
            raise DefinitionError(
                f"compute_tensor_descriptor: negative stride on tensor is not "
                f"supported: strides[{i}]={st}"
            )
    dims = sorted((i for i in range(rank) if strides[i] != 0), key=lambda i: -strides[i])
    for i in range(rank):
        if strides[i] == 0:
            dims.insert(i, i)

    def is_broadcast(d):
        return strides[d] == 0 or sizes[d] == 1

    contiguity: list[bool | None] = [None] * rank
    for pos, d in enumerate(dims):
        if is_broadcast(d):
            continue
        inner = next((e for e in dims[pos + 1 :] if not is_broadcast(e)), None)
        expected = 1 if inner is None else strides[inner] * sizes[inner]
        contiguity[pos] = strides[d] == expected
    stride_order = [0] * rank
    for pos, d in enumerate(dims):
        stride_order[d] = rank - 1 - pos
    return contiguity, stride_order


def builder_sizes(sizes, static_sizes: bool) -> list[int]:
    """The ``shape`` of a tensor defined from its sizes: -1 except for 1s, unless static."""
    out = []
    for i, s in enumerate(sizes):
        if s < 0:
            raise DefinitionError(f"define_tensor: sizes[{i}] = {s}; sizes must be >= 0")
        out.append(s if static_sizes or s == 1 else -1)
    return out


def check_shape(shape, op: str = "define_tensor") -> list[int]:
    shape = list(shape)
    for i, s in enumerate(shape):
        if not isinstance(s, int) or isinstance(s, bool):
            raise ArgumentTypeError(f"{op}: shape[{i}] must be an int, got {describe(s)}")
        if s < -1:
            raise DefinitionError(
                f"{op}: the value {s} at index {i} of shape was neither "
                f"symbolic(-1), zero_element(0), broadcast(1), or static(>1)"
            )
    return shape


def normalize_stride_order(stride_order, rank: int, op: str = "define_tensor") -> list[int]:
    """``stride_order`` with negative entries wrapped; [] when none is given."""
    so = list(stride_order)
    if not so:
        return []
    if len(so) != rank:
        raise DefinitionError(
            f"{op}: stride_order {so} has {len(so)} entries but the tensor has rank {rank}"
        )
    for v in so:
        if not isinstance(v, int) or isinstance(v, bool):
            raise ArgumentTypeError(f"{op}: stride_order entries must be ints, got {describe(v)}")
        if not -rank <= v < rank:
            raise DefinitionError(f"{op}: stride_order entry {v} is out of range [{-rank}, {rank})")
    wrapped = [v % rank for v in so]
    if len(set(wrapped)) != rank:
        raise DefinitionError(f"{op}: stride_order {so} has duplicated entries")
    return wrapped


def allocation_position(rank: int, stride_order: list[int], dim: int) -> int:
    """Where logical ``dim`` sits in the allocation domain (outermost = 0)."""
    return rank - 1 - stride_order[dim] if stride_order else dim


def contiguity_from_bool(shape, stride_order: list[int], contiguous: bool) -> list[bool | None]:
    """nvFuser's ``getContiguityVec``: ``contiguous`` for every dim except size-1 dims (None)."""
    rank = len(shape)
    out: list[bool | None] = [None] * rank
    for i, s in enumerate(shape):
        out[allocation_position(rank, stride_order, i)] = None if s == 1 else contiguous
    return out


def check_contiguity(
    contiguity, shape: list[int], stride_order: list[int], op: str = "define_tensor"
) -> list[bool | None]:
    contiguity = list(contiguity)
    rank = len(shape)
    if len(contiguity) != rank:
        raise DefinitionError(
            f"{op}: length of contiguity ({len(contiguity)}) must match that of shape ({rank})"
        )
    for k, c in enumerate(contiguity):
        if c is not None and not isinstance(c, bool):
            raise ArgumentTypeError(
                f"{op}: contiguity[{k}] must be True, False or None, got {describe(c)}"
            )
    for i, s in enumerate(shape):
        pos = allocation_position(rank, stride_order, i)
        if s == 1 and contiguity[pos] is not None:
            raise DefinitionError(
                f"{op}: dim {i} has size 1 (a broadcast), so its contiguity (contiguity[{pos}], "
                f"in allocation order) must be None, got {contiguity[pos]}"
            )
    return contiguity


def build_input_tensor(
    fusion: Fusion,
    shape: list[int],
    contiguity: list[bool | None],
    dtype: DataType,
    stride_order: list[int],
) -> TensorView:
    """An input TensorView, always with an allocation domain that carries the contiguity.

    ``shape``, ``contiguity`` and ``stride_order`` must already be checked
    (``check_shape``, ``normalize_stride_order``, ``check_contiguity``).
    """
    rank = len(shape)
    ids = []
    for i, s in enumerate(shape):
        expanded = s != 1 and contiguity[allocation_position(rank, stride_order, i)] is None
        extent = None if s == -1 else s
        if s == 1:
            ids.append(IterDomain.broadcast(1))
        elif expanded:
            ids.append(IterDomain.broadcast(extent))
        else:
            ids.append(IterDomain.iteration(extent))
    tv = TensorView(fusion, ids, dtype)
    order = stride_order_to_allocation(ids, stride_order, "define_tensor") if stride_order else ids
    tv.set_allocation_domain(order, list(contiguity))
    return tv


def dense_strides(shape, stride_order=None, expanded=()) -> tuple[int, ...]:
    """Strides of a dense tensor of ``shape`` laid out in nvFuser's ``stride_order``
    (``getContiguousStrides``): expanded dims get stride 0, size-0 dims stride 1."""
    rank = len(shape)
    so = list(stride_order) if stride_order else list(range(rank - 1, -1, -1))
    order = [0] * rank  # dims, outermost first
    for i in range(rank):
        order[rank - 1 - so[i] % rank] = i
    return _dense_in_order(shape, order, expanded)
