"""Triton source for a merge sort of rows of packed keys (argsort's and topk's mode
``merge``, ``schedulers.scan``): rows longer than a sort tile in O(N log**2 N) compares,
where mode ``rank`` takes N**2. Three kernels, over two workspaces ``ws0`` and ``ws1`` of
[rows, NUM_CHUNKS * BLOCK_N] packed keys (``codegen.packed_keys``: unique, their
ascending order the result's):

* ``<op>_runs_kernel``: a program per chunk of ``BLOCK_N`` (the sort tile) of a row sorts
  its keys by the bitonic network (``_sort_packed``) into ``ws0``; the padding past the
  row is ``PACKED_LAST``, after every real key;
* ``<op>_merge_pass_kernel``, launched once a pass: pass ``PASS`` merges the sorted runs
  of ``L = BLOCK_N << PASS`` keys in pairs, from workspace ``PASS % 2`` into the other.
  The key at offset ``i`` of its run counts the keys of the other run of its pair below
  it by a binary search (log2(L) + 1 loads, each at an address the compare before
  decides) and goes to the pair's start + ``i`` + that count: keys are unique, so the
  count is exact and the merge stable. Keys past the padded row read as ``PACKED_LAST``,
  so a run without a partner (an odd one out, at the row's end) stays where it is. Only
  the last run of a row holds padding (equal keys), and it is never searched for them:
  a padding key is counted above every key of the earlier run of its pair, and none of
  the later run's is below it;
* ``<op>_merged_kernel``: a program per chunk of the sorted row's first N keys (argsort)
  or first K (topk) unpacks them (``_index_of``, ``scan_packed.value_of``) and stores the
  results, an argsort's epilogue with them.
"""

from __future__ import annotations

from ..schedulers.scan import ScanParams
from .kernel import Kernel
from .packed_keys import packed_prelude
from .scan_packed import chunk_keys, value_of
from .scan_tile import ScanTile, scan_kernel
from .writer import Writer


def _log(block: int) -> int:
    return block.bit_length() - 1


def _runs(w: Writer, t: ScanTile) -> None:
    """Each chunk of a row sorted into ``ws0`` (a program a chunk)."""
    key = chunk_keys(w, t)
    w.line(f"key = _sort_packed({key}, BLOCK_R, BLOCK_N, {_log(t.p.block_n)})")
    w.line("at = ws0 + rows[:, None].to(tl.int64) * (NUM_CHUNKS * BLOCK_N) + cols[None, :]")
    w.line("tl.store(at, key, mask=rmask[:, None])")


def _workspaces(w: Writer, passes: str) -> None:
    """``src``: the workspace that ``passes`` merge passes leave the runs in (``ws0``
    after an even number), ``dst`` the other."""
    w.line(f"if {passes} % 2 == 0:")
    with w.indent():
        w.line("src = ws0")
        w.line("dst = ws1")
    w.line("else:")
    with w.indent():
        w.line("src = ws1")
        w.line("dst = ws0")


def _merge_pass(w: Writer, t: ScanTile) -> None:
    """Pass ``PASS``: each of ``RESULTS_BLOCK`` keys of a padded row placed in the merge of
    its run and the other run of its pair."""
    w.line("pid = tl.program_id(0)")
    w.line("npad = NUM_CHUNKS * BLOCK_N")
    w.line("blocks = npad // RESULTS_BLOCK")
    w.line("base = (pid // blocks).to(tl.int64) * npad")
    w.line("e = (pid % blocks) * RESULTS_BLOCK + tl.arange(0, RESULTS_BLOCK)")
    _workspaces(w, "PASS")
    w.line("src = src + base")
    w.line("run = BLOCK_N << PASS")
    w.line("key = tl.load(src + e)")
    w.line("i = e & (run - 1)")  # the key's offset in its run
    w.line("pair = e - i - (e & run)")  # the start of its pair of runs
    w.line("other = pair + run - (e & run)")  # ... and of the other run
    # the count of the other run's keys below the key: the largest count up to L - 1
    # that a probe allows, a halving step at a time, then its last key
    w.line("below = tl.zeros([RESULTS_BLOCK], tl.int32)")
    w.line(f"for b in range(0, {_log(t.p.block_n)} + PASS):")
    with w.indent():
        w.line("step = run >> (b + 1)")
        w.line("at = other + below + step - 1")
        w.line("probe = tl.load(src + at, mask=at < npad, other=PACKED_LAST)")
        w.line("below = tl.where(probe < key, below + step, below)")
    w.line("at = other + below")
    w.line("probe = tl.load(src + at, mask=at < npad, other=PACKED_LAST)")
    w.line("below += (probe < key).to(tl.int32)")
    w.line("tl.store(dst + base + pair + i + below, key)")


def _merged(w: Writer, t: ScanTile) -> None:
    """The results from the sorted rows: a program per chunk of each row's first N keys
    (argsort) or first K (topk)."""
    topk = t.p.op == "topk"
    w.line("pid = tl.program_id(0)")
    w.line(
        "blocks = tl.maximum((K + BLOCK_N - 1) // BLOCK_N, 1)" if topk else "blocks = NUM_CHUNKS"
    )
    t.rows(w, "pid // blocks")
    t.columns(w, "(pid % blocks) * BLOCK_N")
    if topk:
        w.line("mask = mask & (cols < K)[None, :]")
    _workspaces(w, "PASS")
    w.line("at = src + rows[:, None].to(tl.int64) * (NUM_CHUNKS * BLOCK_N) + cols[None, :]")
    w.line("key = tl.load(at, mask=mask, other=PACKED_LAST)")
    t.emitter(w)  # the epilogue's loads, at the results' offsets
    if topk:
        t.store(w, 0, value_of(t, "key"), "mask")
        t.store(w, 1, "_index_of(key)", "mask")
    else:
        t.finish(w, "_index_of(key)", "mask")


def emit(spec, params: ScanParams) -> tuple[Kernel, ...]:
    """The merge sort's kernels: the sorted chunks, a merge pass, the results."""
    prelude = packed_prelude(params.packed)
    ws = ("ws0", "ws1")
    op = params.op
    return (
        scan_kernel(spec, params, f"{op}_runs_kernel", _runs, ws, prelude),
        scan_kernel(spec, params, f"{op}_merge_pass_kernel", _merge_pass, ws, prelude, ("PASS",)),
        scan_kernel(spec, params, f"{op}_merged_kernel", _merged, ws, prelude, ("PASS",)),
    )
