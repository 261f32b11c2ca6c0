"""Values of the IR: TensorView, Scalar and Vector.

Every value belongs to one Fusion and is produced by at most one Expr
(``definition``). A fusion input has no definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..dtypes import DataType
from ..errors import ArgumentTypeError, DefinitionError, describe
from .domain import AllocationDomain, IterDomain

if TYPE_CHECKING:
    from .fusion import Expr, Fusion


class Val:
    def __init__(self, fusion: Fusion, dtype: DataType):
        self.fusion = fusion
        self.dtype = dtype
        self.definition: Expr | None = None
        self.index = fusion._register_val(self)

    @property
    def is_input(self) -> bool:
        return self in self.fusion.inputs


class Scalar(Val):
    """A scalar: a constant (``value`` set), a fusion input, or computed by an Expr."""

    def __init__(self, fusion: Fusion, dtype: DataType, value: Any = None):
        super().__init__(fusion, dtype)
        self.value = value

    @property
    def is_constant(self) -> bool:
        return self.value is not None and self.definition is None

    def __repr__(self) -> str:
        v = "" if self.value is None else f"={self.value!r}"
        return f"S{self.index}[{self.dtype.value}{v}]"


class Vector(Val):
    """A list of Int scalars (a shape). ``elements`` may contain constants and inputs."""

    def __init__(self, fusion: Fusion, elements: list[Scalar], dtype: DataType = DataType.Int):
        super().__init__(fusion, dtype)
        self.elements = list(elements)

    @property
    def size(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        return f"V{self.index}{self.elements}"


class TensorView(Val):
    """A tensor: a logical domain, a dtype, and an optional allocation domain.

    ``logical`` includes reduction axes for a reduction's output (as nvFuser's
    logical domain does); ``shape_domain`` drops them and is what a torch
    tensor of this value has as dims.
    """

    def __init__(self, fusion: Fusion, logical: list[IterDomain], dtype: DataType):
        super().__init__(fusion, dtype)
        self.logical: tuple[IterDomain, ...] = tuple(logical)
        self.allocation: AllocationDomain | None = None

    # --- shape -----------------------------------------------------------------
    @property
    def shape_domain(self) -> tuple[IterDomain, ...]:
        return tuple(d for d in self.logical if not d.is_reduction)

    @property
    def ndim(self) -> int:
        return len(self.shape_domain)

    def axis(self, i: int) -> IterDomain:
        """Axis ``i`` of the logical domain, reduction axes included (nvFuser's ``axis``)."""
        n = len(self.logical)
        if not isinstance(i, int) or isinstance(i, bool):
            raise ArgumentTypeError(f"axis of T{self.index}: i must be an int, got {describe(i)}")
        if not -n <= i < n:
            raise DefinitionError(f"axis {i} is out of range for a tensor of {n} logical axes")
        return self.logical[i % n]

    @property
    def static_shape(self) -> tuple[int | None, ...]:
        return tuple(d.extent for d in self.shape_domain)

    # --- layout ----------------------------------------------------------------
    def set_allocation_domain(
        self, ids: Sequence[IterDomain], contiguity: bool | Sequence[bool | None] = True
    ) -> None:
        """Declare the memory order (outermost first) and contiguity of this tensor.

        ``ids`` must be a permutation of ``self.logical`` (reduction axes may be
        included, or left out, in which case they are appended). ``contiguity`` is a
        bool for every allocated axis, or a list in allocation order.
        """
        ids = self._allocation_ids(ids)
        logical_set = {d.uid for d in self.logical}
        if any(d.uid not in logical_set for d in ids) or len({d.uid for d in ids}) != len(ids):
            raise DefinitionError(
                f"set_allocation_domain on T{self.index}: {ids} is not a permutation of "
                f"its logical domain {list(self.logical)}"
            )
        missing = [d for d in self.logical if d.uid not in {x.uid for x in ids}]
        if any(not d.is_reduction for d in missing):
            raise DefinitionError(
                f"set_allocation_domain on T{self.index}: axes {missing} are missing; "
                f"only reduction axes may be left out"
            )
        ids = ids + missing
        if isinstance(contiguity, bool):
            contig = tuple(None if (d.is_broadcast or d.is_reduction) else contiguity for d in ids)
        else:
            contig = self._contiguity_list(contiguity) + (None,) * len(missing)
            if len(contig) != len(ids):
                raise DefinitionError(
                    f"set_allocation_domain on T{self.index}: contiguity has {len(contiguity)} "
                    f"entries, expected {len(ids) - len(missing)}"
                )
        self.allocation = AllocationDomain(tuple(ids), contig)

    def _allocation_ids(self, ids: object) -> list[IterDomain]:
        """The ids argument of ``set_allocation_domain``: a list of this tensor's axes."""
        where = f"set_allocation_domain on T{self.index}"
        if not isinstance(ids, list | tuple):
            raise ArgumentTypeError(
                f"{where}: ids must be a list of IterDomains (tv.axis(i)), got {describe(ids)}"
            )
        for k, d in enumerate(ids):
            if not isinstance(d, IterDomain):
                hint = (
                    f"; pass the axes, [tv.axis({d}), ...], not their positions"
                    if isinstance(d, int) and not isinstance(d, bool)
                    else ""
                )
                raise ArgumentTypeError(
                    f"{where}: ids[{k}] must be an IterDomain (tv.axis(i)), got {describe(d)}{hint}"
                )
        return list(ids)

    def _contiguity_list(self, contiguity: object) -> tuple[bool | None, ...]:
        """The contiguity argument of ``set_allocation_domain`` when it is not one bool."""
        where = f"set_allocation_domain on T{self.index}"
        if not isinstance(contiguity, list | tuple):
            raise ArgumentTypeError(
                f"{where}: contiguity must be a bool or a list of bools and "
                f"Nones (in allocation order), got {describe(contiguity)}"
            )
        for k, c in enumerate(contiguity):
            if c is not None and not isinstance(c, bool):
                raise ArgumentTypeError(
                    f"{where}: contiguity[{k}] must be a bool or None, got {describe(c)}"
                )
        return tuple(contiguity)

    @property
    def allocation_order(self) -> tuple[int, ...]:
        """Positions in ``shape_domain`` from outermost to innermost in memory.

        Reduction axes are dropped (never allocated). Without an allocation
        domain this is row-major ``(0, 1, ..., ndim-1)``.
        """
        dims = self.shape_domain
        if self.allocation is None:
            return tuple(range(len(dims)))
        pos = {d.uid: i for i, d in enumerate(dims)}
        return tuple(pos[d.uid] for d in self.allocation.order if d.uid in pos)

    @property
    def contiguity(self) -> tuple[bool | None, ...]:
        """Contiguity in allocation order over ``shape_domain`` (reduction axes dropped)."""
        if self.allocation is None:
            return tuple(None if d.is_broadcast else True for d in self.shape_domain)
        return tuple(
            c
            for d, c in zip(self.allocation.order, self.allocation.contiguity)
            if not d.is_reduction
        )

    def __repr__(self) -> str:
        return f"T{self.index}[{', '.join(map(repr, self.logical))}]:{self.dtype.value}"
