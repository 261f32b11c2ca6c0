"""The ops suite's cases: data-movement, indexing, scan and random ops (issue 14, item 8),
each a frozen :class:`OpCase` of an op row (:mod:`benchmarks.op_rows`), input shapes
and a dtype, at the sizes of a :class:`Sizes`.

Bytes moved are the inputs read once and the outputs written once, where a gather
counts only the rows (elements) its index names and a slice only the elements it keeps
(``op.read_bytes``). ``memory_bound`` says whether the case's target applies (at least
85% of the copy bandwidth, and not behind the faster peer); where it is False,
``why`` says what bounds it instead.

Row fields of the result JSON (beside :mod:`benchmarks.report`'s per-system entries):
``case``, ``suite``, ``group`` (the op family), ``op`` (the row's parameters),
``shape`` (the first input's), ``shapes`` (every tensor input's), ``dtype``,
``memory_bound``, ``why``, ``timing`` and ``bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import torch

from benchmarks.cases import TORCH_DTYPES
from benchmarks.harness import CaseKind
from benchmarks.op_rows import (
    Argsort,
    Cat,
    Cumsum,
    Draw,
    Dropout,
    Embedding,
    IndexSelect,
    NormBackward,
    Pad,
    SlicePointwise,
    TakeAlongAxis,
    TopK,
    nbytes,
    tensors,
)
from benchmarks.reference import as_outputs

DTYPES = ("float32", "bfloat16")


@dataclass(frozen=True)
class OpCase:
    """One measurement of the ops suite: ``op`` on inputs of ``shapes`` in ``dtype``
    (index inputs are int64 whatever ``dtype``)."""

    name: str
    op: Any  # a row of benchmarks.op_rows
    shapes: tuple[tuple[int, ...], ...]
    dtype: str = "float32"
    memory_bound: bool = True
    why: str = ""
    timing: ClassVar[str] = "device"

    @property
    def group(self) -> str:
        return self.op.family

    @property
    def torch_dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self.dtype]

    def inputs(self, device: str, seed: int = 0) -> list:
        return self.op.inputs(self.shapes, self.torch_dtype, Draw.seeded(device, seed))

    @cached_property
    def _meta(self) -> tuple[list, tuple[torch.Tensor, ...]]:
        xs = self.op.inputs(self.shapes, self.torch_dtype, Draw("meta"))
        return xs, as_outputs(self.op.function()(*xs))

    @property
    def input_bytes(self) -> int:
        return sum(map(nbytes, tensors(self._meta[0])))

    @property
    def bytes_moved(self) -> int:
        xs, outs = self._meta
        return self.op.read_bytes(xs) + sum(map(nbytes, outs))


def header(case: OpCase, suite: str) -> dict:
    return {
        "case": case.name,
        "suite": suite,
        "group": case.group,
        "op": repr(case.op),
        "shape": list(case.shapes[0]),
        "shapes": [list(s) for s in case.shapes],
        "dtype": case.dtype,
        "memory_bound": case.memory_bound,
        "why": case.why or None,
        "timing": case.timing,
        "bytes": case.bytes_moved,
    }


OP_CASES = CaseKind(
    header=header,
    inputs=lambda case, device, seed: case.inputs(device, seed),
    checker=lambda case, xs: case.op.checker(xs),
)


@dataclass(frozen=True)
class Sizes:
    """The extents the cases are built from (the defaults: the full suite)."""

    rows: int = 8192
    width: int = 2048  # a cat piece, a slice's output
    wide: int = 4096  # cumsum, take_along_axis
    padded: int = 8192  # pad's output width
    vocab: int = 50257
    hidden: int = 768
    n_index: int = 8192
    gather_k: int = 64  # take_along_axis: indices a row
    topk_row: int = 1024
    vocab_rows: int = 64
    vocab_row: int = 50257  # topk of vocabulary rows
    square: int = 8192  # dropout
    long_rows: int = 1024  # a cumsum over rows longer than a tile
    long_row: int = 65536
    split_rows: int = 4  # a cumsum over a few very long rows
    split_row: int = 1 << 24
    sort_row: int = 2048


FULL = Sizes()
QUICK = {
    # a smoke run on a GPU: the same kinds of problem, a sixteenth of the bytes or so
    "cuda": Sizes(rows=2048, square=2048, vocab_rows=16, long_rows=64, split_row=1 << 20),
    # Triton's interpreter: numerics only
    "cpu": Sizes(
        rows=16,
        width=32,
        wide=64,
        padded=64,
        vocab=5021,
        hidden=16,
        n_index=32,
        gather_k=8,
        topk_row=100,
        vocab_rows=2,
        vocab_row=1200,  # longer rows take topk's rank mode: minutes in the interpreter
        square=64,
        long_rows=2,
        long_row=3000,
        split_rows=2,
        split_row=1 << 13,
        sort_row=64,
    ),
}

SCATTERED = "scattered element reads: each costs a 32-byte sector; the bytes count the elements"
FEW_ROWS = "few long rows: one program a row leaves most SMs idle"
SORT = "a sort's compare-exchange stages grow as log^2 of the row"


def cat_cases(s: Sizes) -> list[tuple[str, Any, list]]:
    r, w = s.rows, s.width
    out = []
    for n in (2, 3, 4):
        out.append((f"cat{n}_inner", Cat(1), [(r, w)] * n))
        out.append((f"cat{n}_outer", Cat(0), [(r, w)] * n))
    out.append(("cat3_inner_mixed", Cat(1), [(r, w // 2), (r, w), (r, 3 * w // 2)]))
    out.append(("cat2_inner_odd", Cat(1), [(r, w - 1), (r, w + 1)]))
    out.append(("cat3_outer_mixed", Cat(0), [(r // 2, w), (r, w), (3 * r // 2, w)]))
    return out


def movement_cases(s: Sizes) -> list[tuple[str, Any, list]]:
    r, w, p = s.rows, s.width, s.padded
    return [
        ("slice_mid_cols", SlicePointwise(((0, r, 1), (w // 2, 3 * w // 2, 1))), [(r, 2 * w)]),
        ("slice_step2_rows", SlicePointwise(((0, 2 * r, 2), (0, w, 1))), [(2 * r, w)]),
        ("slice_step2_cols", SlicePointwise(((0, r, 1), (0, 2 * w, 2))), [(r, 2 * w)]),
        ("pad_inner", Pad((1, 1)), [(r, p - 2)]),
        ("pad_outer", Pad((0, 0, 1, 1)), [(r - 2, p)]),
    ]


def indexing_cases(s: Sizes) -> list[tuple[str, Any, list, str]]:
    table = (s.vocab, s.hidden)
    ids = (8, s.n_index // 8)
    return [
        ("index_select_rows", IndexSelect(s.n_index), [table], ""),
        ("embedding_fwd", Embedding(ids), [table], ""),
        ("take_along_axis_k", TakeAlongAxis(1, s.gather_k), [(s.rows, s.wide)], SCATTERED),
        ("take_along_axis_full", TakeAlongAxis(1, 0), [(s.rows, s.wide)], ""),
    ]


def scan_cases(s: Sizes) -> list[tuple[str, Any, list, str]]:
    r = s.rows
    return [
        ("cumsum_dim1", Cumsum(1), [(r, s.wide)], ""),
        ("cumsum_dim0", Cumsum(0), [(r, s.wide)], ""),
        ("cumsum_dim1_colmajor", Cumsum(1, column_major=True), [(s.wide, r)], ""),
        ("cumsum_long_rows", Cumsum(1), [(s.long_rows, s.long_row)], ""),
        ("cumsum_split_rows", Cumsum(1), [(s.split_rows, s.split_row)], ""),
        ("topk8_rows", TopK(8), [(r, s.topk_row)], ""),
        ("topk50_vocab_rows", TopK(50), [(s.vocab_rows, s.vocab_row)], FEW_ROWS),
        ("argsort_rows", Argsort(1), [(r, s.sort_row)], SORT),
        ("argsort_short_rows", Argsort(1), [(8 * r, s.sort_row // 8)], SORT),
    ]


def backward_cases(s: Sizes) -> list[tuple[str, Any, list, str]]:
    """Norm backwards as Thunder's regions hold them: rows of the issue's H (2048), of
    GPT-2's n_embd (768, four times the rows) and a wider RMS norm (4096)."""
    r = s.rows
    return [
        ("layer_norm_bwd", NormBackward("layer_norm"), [(r, s.width)], ""),
        ("layer_norm_bwd_768", NormBackward("layer_norm"), [(4 * r, s.hidden)], ""),
        ("rms_norm_bwd", NormBackward("rms_norm"), [(r, s.wide)], ""),
        ("softmax_bwd", NormBackward("softmax"), [(r, s.width)], ""),
    ]


def op_cases(s: Sizes = FULL) -> list[OpCase]:
    plain = [(*c, "") for c in cat_cases(s) + movement_cases(s)]
    square = [("dropout_p0.1", Dropout(0.1), [(s.square, s.square)], "")]
    specs = plain + indexing_cases(s) + scan_cases(s) + square + backward_cases(s)
    return [
        OpCase(f"{name}_{dtype}", op, tuple(map(tuple, shapes)), dtype, not why, why)
        for dtype in DTYPES
        for name, op, shapes, why in specs
    ]
