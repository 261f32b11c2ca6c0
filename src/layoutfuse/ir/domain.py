"""IterDomain: one axis of a tensor, and the allocation domain that orders them in memory.

An IterDomain is an identity (tensors refer to the same object where an axis is
shared through a view, e.g. ``set``); its extent is a static ``int`` or ``None``
(symbolic, bound when the fusion runs). Its kind is one of

* ``ITERATION``: an ordinary axis;
* ``REDUCTION``: an axis a reduction consumed; it stays in the reduction output's
  logical domain (as in nvFuser) but is never allocated;
* ``BROADCAST``: extent 1, or ``expanded`` to a larger extent with stride 0.

An iteration axis of unknown extent that an op makes when the fusion runs (a factory's,
a reshape's, a resize by slice or pad, topk's k) is ``symbolic``, as nvFuser's
``IterType::Symbolic``: it may be squeezed, and the run checks that its extent is 1. A
declared input axis of unknown extent is not (nvFuser refuses to squeeze it).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass

_ids = itertools.count()


class IterType(enum.Enum):
    ITERATION = "i"
    REDUCTION = "r"
    BROADCAST = "b"


class IterDomain:
    __slots__ = ("extent", "iter_type", "expanded", "symbolic", "uid")

    def __init__(
        self,
        extent: int | None,
        iter_type: IterType = IterType.ITERATION,
        expanded: bool = False,
        symbolic: bool = False,
    ):
        if extent is not None and extent < 0:
            raise ValueError(f"extent must be >= 0, got {extent}")
        if expanded and iter_type is not IterType.BROADCAST:
            raise ValueError("only a broadcast axis can be expanded")
        self.extent = extent
        self.iter_type = iter_type
        self.expanded = expanded
        # made at run time with an unknown extent (the module's docstring)
        self.symbolic = symbolic and extent is None and iter_type is IterType.ITERATION
        self.uid = next(_ids)

    @property
    def is_reduction(self) -> bool:
        return self.iter_type is IterType.REDUCTION

    @property
    def is_broadcast(self) -> bool:
        return self.iter_type is IterType.BROADCAST

    @property
    def is_iteration(self) -> bool:
        return self.iter_type is IterType.ITERATION

    def __repr__(self) -> str:
        ext = "?" if self.extent is None else str(self.extent)
        tag = self.iter_type.value + ("x" if self.expanded else "")
        return f"{tag}{self.uid}{{{ext}}}"

    @staticmethod
    def iteration(extent: int | None) -> IterDomain:
        return IterDomain(extent, IterType.ITERATION)

    @staticmethod
    def made(extent: int | None) -> IterDomain:
        """An iteration axis an op makes: symbolic where its extent is unknown."""
        return IterDomain(extent, IterType.ITERATION, symbolic=True)

    @staticmethod
    def broadcast(extent: int | None = 1) -> IterDomain:
        """A broadcast axis; an extent other than 1 (or unknown) makes it expanded."""
        return IterDomain(extent, IterType.BROADCAST, expanded=(extent != 1))

    @staticmethod
    def reduction(extent: int | None) -> IterDomain:
        return IterDomain(extent, IterType.REDUCTION)


@dataclass(frozen=True)
class AllocationDomain:
    """Memory order of a tensor's axes, outermost first, with per-axis contiguity.

    ``order`` is a permutation of the tensor's logical domain (reduction axes
    allowed; they are skipped when strides are computed). ``contiguity[k]`` belongs
    to ``order[k]``: True (dense with the next inner allocated axis), False (any
    stride) or None (a broadcast or reduction axis).
    """

    order: tuple[IterDomain, ...]
    contiguity: tuple[bool | None, ...]

    def __post_init__(self) -> None:
        if len(self.order) != len(self.contiguity):
            raise ValueError("allocation order and contiguity must have the same length")
