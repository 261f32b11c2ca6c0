"""Fusion: the container of values and expressions, and the FusionGuard context.

Expressions are kept in definition order, which is a topological order.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DefinitionError
from .values import Scalar, TensorView, Val, Vector

if TYPE_CHECKING:
    from .opdef import OpDef


@dataclass(eq=False)
class Expr:
    """One op application: ``outputs = op(inputs, **attrs)``."""

    op: OpDef
    inputs: tuple[Val, ...]
    outputs: tuple[Val, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        outs = ", ".join(f"{type(v).__name__[0]}{v.index}" for v in self.outputs)
        ins = ", ".join(f"{type(v).__name__[0]}{v.index}" for v in self.inputs)
        attrs = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"{outs} = {self.op.name}({ins}{attrs})"


@dataclass(frozen=True)
class OutputSpec:
    """How one fusion output is returned.

    ``alias_input``: the output is written into that input and not returned.
    ``stride_order``: nvFuser's stride order pinned by ``add_output(..., stride_order=)``.
    """

    value: Val
    alias_input: Val | None = None


class Fusion:
    def __init__(self) -> None:
        self.vals: list[Val] = []
        self.exprs: list[Expr] = []
        self.inputs: list[Val] = []
        self.outputs: list[OutputSpec] = []
        # tensors of the same coordinates that one kernel reads or computes together: the
        # two parts of a complex input or output (``passes/complex_lowering.py``), whose
        # loads and stores share cache lines; the segmenter gives each pair of outputs one
        # pointwise kernel, and reductions of a pair of inputs are siblings (one kernel)
        self.kernel_partners: list[tuple[TensorView, TensorView]] = []

    # --- construction ----------------------------------------------------------
    def _register_val(self, v: Val) -> int:
        self.vals.append(v)
        return len(self.vals) - 1

    def add_expr(self, expr: Expr) -> Expr:
        for v in expr.inputs:
            if v.fusion is not self:
                raise DefinitionError(f"{expr.op.name}: operand {v!r} belongs to another fusion")
        for v in expr.outputs:
            v.definition = expr
        self.exprs.append(expr)
        return expr

    def add_input(self, v: Val) -> None:
        if v.definition is not None:
            raise DefinitionError(
                f"{v!r} is computed by {v.definition.op.name}; it cannot be an input"
            )
        if v in self.inputs:
            raise DefinitionError(f"{v!r} is already an input")
        self.inputs.append(v)

    def add_output(self, v: Val, alias_input: Val | None = None) -> None:
        if alias_input is not None and alias_input not in self.inputs:
            raise DefinitionError(f"alias_input {alias_input!r} is not a fusion input")
        self.outputs.append(OutputSpec(v, alias_input))

    # --- queries ---------------------------------------------------------------
    @property
    def output_vals(self) -> list[Val]:
        return [o.value for o in self.outputs]

    def tensor_inputs(self) -> list[TensorView]:
        return [v for v in self.inputs if isinstance(v, TensorView)]

    def uses(self, v: Val) -> list[Expr]:
        return [e for e in self.exprs if any(i is v for i in e.inputs)]

    def dependencies(self, v: Val) -> list[Val]:
        """Every value ``v`` depends on, itself included, in topological order."""
        seen: dict[int, Val] = {}
        stack = [v]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen[id(x)] = x
            if x.definition is not None:
                stack.extend(x.definition.inputs)
            if isinstance(x, Vector):
                stack.extend(x.elements)
        order = {id(val): i for i, val in enumerate(self.vals)}
        return sorted(seen.values(), key=lambda x: order[id(x)])

    def input_dependencies(self, v: Val) -> list[Val]:
        return [x for x in self.dependencies(v) if x in self.inputs]

    def __repr__(self) -> str:
        lines = [f"Fusion(inputs={self.inputs})"]
        lines += [f"  {e!r}" for e in self.exprs]
        lines.append(f"  outputs={[o.value for o in self.outputs]}")
        return "\n".join(lines)


# --- the current fusion (FusionGuard) -------------------------------------------------
_local = threading.local()


def current_fusion() -> Fusion:
    f: Fusion | None = getattr(_local, "fusion", None)
    if f is None:
        raise DefinitionError(
            "no active fusion: use `with FusionGuard(fusion):` or FusionDefinition"
        )
    return f


class FusionGuard:
    """Makes ``fusion`` the target of free-function ops inside a ``with`` block."""

    def __init__(self, fusion: Fusion):
        self.fusion = fusion
        self._prev: Fusion | None = None

    def __enter__(self) -> Fusion:
        self._prev = getattr(_local, "fusion", None)
        _local.fusion = self.fusion
        return self.fusion

    def __exit__(self, *exc: object) -> None:
        _local.fusion = self._prev


__all__ = [
    "Expr",
    "Fusion",
    "FusionGuard",
    "OutputSpec",
    "current_fusion",
    "Scalar",
    "TensorView",
    "Val",
    "Vector",
]
