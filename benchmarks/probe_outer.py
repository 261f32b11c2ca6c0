"""Probe kernels for reductions over a strided (outer) axis, outside the code generator.

Hand-written Triton kernels with every knob exposed, to find out *why* a generated
outer kernel runs below the read ceiling before the scheduler is changed:

* ``sum``: ``y[x] = sum_r a[r, x]`` on a row-major ``[R, X]`` (X is stride-1). Knobs:
  tile ``[BLOCK_R, BLOCK_X]``, warps, ``maxnreg`` (caps registers so that the number of
  resident programs per multiprocessor is known), ``split`` (R cut into chunks, partials
  added with fp32 atomics: a probe, not deterministic).
* ``softmax``: softmax over R of ``[B, R, X]`` (X stride-1): ``online`` walks each
  column block twice (max and sum in one pass, then the store pass re-reads the block,
  from L2 when the blocks being walked fit there); ``persistent`` holds the whole column
  block in registers.

Each line prints the kernel's registers, its resident programs per multiprocessor, the
number of programs and waves, GB/s and % of the read ceiling measured in the same run.

    python -m benchmarks probe outer sum --dtype bfloat16 --shape 256,524288 \\
        --tile 8x512 --warps 8 --maxnreg 0,32 --split 1,2
"""

from __future__ import annotations

import argparse
import itertools
import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import measure_ceilings, time_kernel


@triton.jit
def _outer_sum(
    a, y, R, X, CHUNK, BLOCK_R: tl.constexpr, BLOCK_X: tl.constexpr, ATOMIC: tl.constexpr
):
    px = tl.program_id(0)
    ps = tl.program_id(1)
    cols = px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]
    acc = tl.zeros([BLOCK_R, BLOCK_X], tl.float32)
    r0 = ps * CHUNK
    for r in range(r0, r0 + CHUNK, BLOCK_R):
        rows = r + tl.arange(0, BLOCK_R)[:, None]
        acc += tl.load(a + rows * X + cols, mask=rows < R, other=0).to(tl.float32)
    s = tl.sum(acc, 0)
    out = px * BLOCK_X + tl.arange(0, BLOCK_X)
    if ATOMIC:
        tl.atomic_add(y + out, s)
    else:
        tl.store(y + out, s)


@triton.jit
def _softmax_online(a, o, B, R, X, BLOCK_R: tl.constexpr, BLOCK_X: tl.constexpr):
    nxb = X // BLOCK_X
    for blk in range(tl.program_id(0), B * nxb, tl.num_programs(0)):
        px = blk % nxb
        base = (blk // nxb).to(tl.int64) * R * X
        cols = px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]
        m = tl.full([BLOCK_R, BLOCK_X], float("-inf"), tl.float32)
        s = tl.zeros([BLOCK_R, BLOCK_X], tl.float32)
        for r in range(0, R, BLOCK_R):
            rows = r + tl.arange(0, BLOCK_R)[:, None]
            v = tl.load(a + base + rows * X + cols).to(tl.float32)
            m2 = tl.maximum(m, v)
            s = s * tl.exp(m - m2) + tl.exp(v - m2)
            m = m2
        mc = tl.max(m, 0)[None, :]
        sc = tl.sum(s * tl.exp(m - mc), 0)[None, :]
        inv = 1.0 / sc
        for r in range(0, R, BLOCK_R):
            rows = r + tl.arange(0, BLOCK_R)[:, None]
            v = tl.load(a + base + rows * X + cols).to(tl.float32)
            tl.store(o + base + rows * X + cols, (tl.exp(v - mc) * inv).to(o.dtype.element_ty))


@triton.jit
def _softmax_persistent(a, o, B, R, X, BLOCK_R: tl.constexpr, BLOCK_X: tl.constexpr):
    nxb = X // BLOCK_X
    for blk in range(tl.program_id(0), B * nxb, tl.num_programs(0)):
        px = blk % nxb
        base = (blk // nxb).to(tl.int64) * R * X
        cols = px * BLOCK_X + tl.arange(0, BLOCK_X)[None, :]
        rows = tl.arange(0, BLOCK_R)[:, None]
        v = tl.load(a + base + rows * X + cols, mask=rows < R, other=float("-inf")).to(tl.float32)
        mc = tl.max(v, 0)[None, :]
        e = tl.exp(v - mc)
        inv = 1.0 / tl.sum(e, 0)[None, :]
        tl.store(o + base + rows * X + cols, (e * inv).to(o.dtype.element_ty), mask=rows < R)


@triton.jit
def _arrive(ws, cnt, blk, part, m, ls, S: tl.constexpr, BLOCK_X: tl.constexpr):
    """Store this program's partial (max, sum of exp) of block ``blk`` and count it in."""
    lx = tl.arange(0, BLOCK_X)
    wsb = ws + (blk * S + part) * (2 * BLOCK_X) + lx
    tl.store(wsb, m)
    tl.store(wsb + BLOCK_X, ls)
    tl.debug_barrier()  # every thread's partial precedes the count
    tl.atomic_add(cnt + 2 * blk, 1, sem="release", scope="gpu")


@triton.jit
def _combined(ws, cnt, blk, S: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_X: tl.constexpr):
    """Wait until the S partials of block ``blk`` are stored; their max and 1 / sum of exp
    per column ([1, BLOCK_X] each)."""
    c = tl.atomic_add(cnt + 2 * blk, 0, sem="acquire", scope="gpu")
    while c < S:
        c = tl.atomic_add(cnt + 2 * blk, 0, sem="acquire", scope="gpu")
    ss = tl.arange(0, BLOCK_S)[:, None]
    pw = ws + (blk * S + ss) * (2 * BLOCK_X) + tl.arange(0, BLOCK_X)[None, :]
    pm = tl.load(pw, mask=ss < S, other=float("-inf"), cache_modifier=".cg")
    pl = tl.load(pw + BLOCK_X, mask=ss < S, other=0.0, cache_modifier=".cg")
    mm = tl.max(pm, 0)[None, :]
    return mm, 1.0 / tl.sum(pl * tl.exp(pm - mm), 0)[None, :]


@triton.jit
def _depart(cnt, blk, S: tl.constexpr):
    """Count this program out of block ``blk``; the last one resets both counters."""
    d = tl.atomic_add(cnt + 2 * blk + 1, 1, sem="relaxed", scope="gpu")
    if d == S - 1:
        tl.atomic_xchg(cnt + 2 * blk, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(cnt + 2 * blk + 1, 0, sem="relaxed", scope="gpu")


@triton.jit
def _softmax_coop(
    a,
    o,
    ws,
    cnt,
    B,
    R,
    X,
    RC,
    S: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_X: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    """S programs share a column block: each holds RC rows of it in registers, stores its
    partial (max, sum of exp) per column, waits at the block's counter until all S have
    stored, combines the S partials and stores its rows. Every program of the grid must be
    resident at once (the grid is sized from the occupancy). ``cnt`` holds two counters per
    block (arrivals, departures), zero between launches: the last to depart resets both."""
    pid = tl.program_id(0)
    g = pid // S
    part = pid % S
    ngroups = tl.num_programs(0) // S
    nxb = X // BLOCK_X
    lr = tl.arange(0, BLOCK_R)[:, None]
    lx = tl.arange(0, BLOCK_X)
    for blk in range(g, B * nxb, ngroups):
        px = blk % nxb
        base = (blk // nxb).to(tl.int64) * R * X
        cols = px * BLOCK_X + lx[None, :]
        rows = part * RC + lr
        mask = (lr < RC) & (rows < R)
        off = base + rows * X + cols
        v = tl.load(a + off, mask=mask, other=float("-inf")).to(tl.float32)
        m = tl.max(v, 0)
        _arrive(ws, cnt, blk, part, m, tl.sum(tl.exp(v - m[None, :]), 0), S, BLOCK_X)
        mm, inv = _combined(ws, cnt, blk, S, BLOCK_S, BLOCK_X)
        tl.store(o + off, (tl.exp(v - mm) * inv).to(o.dtype.element_ty), mask=mask)
        _depart(cnt, blk, S)


@triton.jit
def _softmax_lag(
    a,
    o,
    ws,
    cnt,
    B,
    R,
    X,
    RC,
    S: tl.constexpr,
    LAG: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_X: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    """As ``_softmax_coop``, S programs share a column block, RC rows each, but nothing is
    held across the wait: in round t a program reads its chunk of block t and stores the
    partial (running max and sum over the chunk), then finishes block t - LAG: waits for
    that block's S partials (long stored, as a rule), combines them and re-reads its chunk
    (from L2, read LAG rounds ago) to store the output."""
    pid = tl.program_id(0)
    g = pid // S
    part = pid % S
    ngroups = tl.num_programs(0) // S
    nxb = X // BLOCK_X
    nblk = B * nxb
    nrounds = (nblk - g + ngroups - 1) // ngroups
    lr = tl.arange(0, BLOCK_R)[:, None]
    lx = tl.arange(0, BLOCK_X)
    r0 = part * RC
    for t in range(0, nrounds + LAG):
        if t < nrounds:
            blk = g + t * ngroups
            base = (blk // nxb).to(tl.int64) * R * X + (blk % nxb) * BLOCK_X + lx[None, :]
            m = tl.full([BLOCK_R, BLOCK_X], float("-inf"), tl.float32)
            acc = tl.zeros([BLOCK_R, BLOCK_X], tl.float32)
            for r in range(r0, r0 + RC, BLOCK_R):
                rows = r + lr
                v = tl.load(a + base + rows * X, mask=rows < R, other=float("-inf")).to(tl.float32)
                m2 = tl.maximum(m, v)
                acc = tl.where(m2 == float("-inf"), acc, acc * tl.exp(m - m2) + tl.exp(v - m2))
                m = m2
            mc = tl.max(m, 0)
            lc = tl.sum(tl.where(m == float("-inf"), 0.0, acc * tl.exp(m - mc[None, :])), 0)
            _arrive(ws, cnt, blk, part, mc, lc, S, BLOCK_X)
        if t >= LAG:
            blk = g + (t - LAG) * ngroups
            mm, inv = _combined(ws, cnt, blk, S, BLOCK_S, BLOCK_X)
            base = (blk // nxb).to(tl.int64) * R * X + (blk % nxb) * BLOCK_X + lx[None, :]
            for r in range(r0, r0 + RC, BLOCK_R):
                rows = r + lr
                v = tl.load(a + base + rows * X, mask=rows < R, other=0.0).to(tl.float32)
                tl.store(
                    o + base + rows * X,
                    (tl.exp(v - mm) * inv).to(o.dtype.element_ty),
                    mask=rows < R,
                )
            _depart(cnt, blk, S)


def occupancy(kernel, num_warps: int) -> tuple[int, int]:
    """(registers per thread, resident programs per multiprocessor) on sm_90 (64K
    registers, 64 warps, allocation in 256-register units per warp)."""
    regs = kernel.n_regs
    per_warp = -(-regs * 32 // 256) * 256
    by_regs = 65536 // max(1, per_warp * num_warps)
    return regs, max(0, min(by_regs, 64 // num_warps, 32))


def _bench(fn) -> float:
    return time_kernel(fn, "cuda", "read")


def _both(fn, nbytes: int, ceiling: float) -> str:
    """GB/s and % of the ceiling, L2 emptied by a read, then by do_bench's zeroing."""
    out = []
    for flush in ("read", "write"):
        gb = nbytes / time_kernel(fn, "cuda", flush) / 1e6
        out.append(f"{flush} {gb:6.0f} GB/s {100 * gb / ceiling:5.1f}%")
    return " | ".join(out)


def coop_grid(kernel, warps: int, sms: int, split: int, blocks: int, per: int) -> tuple[int, int]:
    """(programs, resident per SM): groups of ``split`` programs, at most what is resident
    at once by registers and shared memory (every program of a group spins until the others
    arrive), at most ``per`` per SM where given."""
    _, by_regs = occupancy(kernel, warps)
    smem = kernel.metadata.shared
    by_smem = (228 * 1024) // max(1, smem + 1024) if smem else 32
    resident = min(by_regs, by_smem) * sms
    if per:
        resident = min(resident, per * sms)
    return min(blocks, resident // split) * split, min(by_regs, by_smem)


def _softmax_problem(args):
    """(B, R, X, input, output, fp32 reference, bytes moved) of a softmax over R of a
    [B, R, X] (X stride-1) input."""
    B, R, X = (int(v) for v in args.shape.split(","))
    a = torch.randn(B, R, X, device="cuda").to(getattr(torch, args.dtype))
    return B, R, X, a, torch.empty_like(a), torch.softmax(a.float(), 1), 2 * a.nbytes


def probe_shared(args, ceiling: float, sms: int) -> None:
    """``coop`` (chunk held in registers across the wait; ``--tile`` is BLOCK_X, the chunk
    one tile) or ``lag`` (chunk walked in ``--tile`` BLOCK_RxBLOCK_X steps, store pass LAG
    rounds later): S programs per column block, the grid sized from the occupancy."""
    lagged = args.kind == "lag"
    kernel = _softmax_lag if lagged else _softmax_coop
    B, R, X, a, o, ref, nbytes = _softmax_problem(args)
    for tile, split, lag, warps, per in itertools.product(
        args.tile, args.split, args.lag if lagged else [0], args.warps, args.per_sm
    ):
        rc = -(-R // split)
        if lagged:
            br, bx = (int(v) for v in tile.split("x"))
            rc = -(-rc // br) * br
        else:
            br, bx = triton.next_power_of_2(rc), int(tile)
        blocks = B * (X // bx)
        ws = torch.empty(blocks * split * 2 * bx, device="cuda")
        cnt = torch.zeros(2 * blocks, dtype=torch.int32, device="cuda")
        meta = dict(
            S=split,
            BLOCK_R=br,
            BLOCK_X=bx,
            BLOCK_S=triton.next_power_of_2(split),
            num_warps=warps,
            **({"LAG": lag} if lagged else {}),
        )
        label = f"{args.kind} {tile} split {split} w{warps}"
        try:
            kern = kernel.warmup(a, o, ws, cnt, B, R, X, rc, grid=(split,), **meta)
            kern._init_handles()  # loads the binary: n_regs, n_spills
        except Exception as e:  # noqa: BLE001 - a probe: report and go on
            print(f"{label}: {type(e).__name__} {str(e)[:200]}")
            continue
        progs, per_sm = coop_grid(kern, warps, sms, split, blocks, per)
        if progs == 0:
            print(f"{label}: a group does not fit ({per_sm}/SM)")
            continue

        def run(progs=progs, ws=ws, cnt=cnt, rc=rc, meta=meta):
            return kernel[(progs,)](a, o, ws, cnt, B, R, X, rc, **meta)

        o.zero_()
        run()
        torch.cuda.synchronize()
        ok = torch.allclose(o.float(), ref, rtol=2e-2, atol=1e-5) and int(cnt.abs().sum()) == 0
        per_round = progs * rc * bx * a.element_size() / 2**20
        print(
            f"{args.kind} {args.dtype} [{B},{R},{X}] tile {br}x{bx} chunk {rc} split {split}"
            f"{f' lag {lag}' if lagged else ''} w{warps} per-SM {per or '-'}: regs "
            f"{kern.n_regs} spills {kern.n_spills} smem {kern.metadata.shared} {per_sm}/SM "
            f"programs {progs} rounds {blocks * split / progs:.1f} round {per_round:.1f} MiB "
            f"{_both(run, nbytes, ceiling)} {'ok' if ok else 'WRONG'}",
            flush=True,
        )


def probe_sum(args, ceiling: float, sms: int) -> None:
    dtype = getattr(torch, args.dtype)
    R, X = (int(v) for v in args.shape.split(","))
    a = torch.randn(R, X, device="cuda").to(dtype)
    ref = a.float().sum(0)
    nbytes = a.numel() * a.element_size() + X * 4
    for tile, warps, maxnreg, split in itertools.product(
        args.tile, args.warps, args.maxnreg, args.split
    ):
        br, bx = (int(v) for v in tile.split("x"))
        chunk = -(-R // split)
        chunk = -(-chunk // br) * br
        y = torch.zeros(X, device="cuda")
        grid = (X // bx, -(-R // chunk))
        opts = {"num_warps": warps}
        if maxnreg:
            opts["maxnreg"] = maxnreg

        def run(y=y, grid=grid, chunk=chunk, br=br, bx=bx, atomic=split > 1, opts=opts):
            if atomic:
                y.zero_()
            return _outer_sum[grid](
                a, y, R, X, chunk, BLOCK_R=br, BLOCK_X=bx, ATOMIC=atomic, **opts
            )

        kern = run()
        torch.cuda.synchronize()
        ok = torch.allclose(y, ref, rtol=1e-3, atol=1e-2)
        regs, per_sm = occupancy(kern, warps)
        progs = grid[0] * grid[1]
        waves = progs / max(1, per_sm * sms)
        print(
            f"sum {args.dtype} [{R},{X}] tile {br}x{bx} w{warps} maxnreg {maxnreg or '-'} "
            f"split {grid[1]}: regs {regs} {per_sm}/SM programs {progs} waves {waves:.2f} "
            f"{_both(run, nbytes, ceiling)} {'ok' if ok else 'WRONG'}",
            flush=True,
        )


def probe_softmax(args, ceiling: float, sms: int) -> None:
    B, R, X, a, o, ref, nbytes = _softmax_problem(args)
    for mode, tile, warps, maxnreg, per in itertools.product(
        args.mode, args.tile, args.warps, args.maxnreg, args.per_sm
    ):
        br, bx = (int(v) for v in tile.split("x"))
        if mode == "persistent":
            br = triton.next_power_of_2(R)
        fn = _softmax_online if mode == "online" else _softmax_persistent
        blocks = X // bx * B
        grid = (min(blocks, per * sms) if per else blocks,)
        opts = {"num_warps": warps}
        if maxnreg:
            opts["maxnreg"] = maxnreg

        def run(fn=fn, grid=grid, br=br, bx=bx, opts=opts):
            return fn[grid](a, o, B, R, X, BLOCK_R=br, BLOCK_X=bx, **opts)

        try:
            kern = run()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a probe: report and go on
            print(f"softmax {mode} tile {br}x{bx} w{warps}: {type(e).__name__} {str(e)[:200]}")
            continue
        ok = torch.allclose(o.float(), ref, rtol=2e-2, atol=1e-5)
        regs, per_sm = occupancy(kern, warps)
        ms = _bench(run)
        gb = nbytes / ms / 1e6
        progs = grid[0]
        waves = progs / max(1, per_sm * sms)
        l2 = min(progs, per_sm * sms) * R * bx * a.element_size() / 2**20
        print(
            f"softmax {mode} {args.dtype} [{B},{R},{X}] tile {br}x{bx} w{warps} per-SM {per} maxnreg "
            f"{maxnreg or '-'}: regs {regs} {per_sm}/SM programs {progs} waves {waves:.2f} "
            f"resident blocks {l2:.0f} MiB {gb:7.0f} GB/s {100 * gb / ceiling:5.1f}% "
            f"{'ok' if ok else 'WRONG'}",
            flush=True,
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks probe outer", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("kind", choices=["sum", "softmax", "coop", "lag"])
    ap.add_argument(
        "--lag",
        type=lambda s: [int(v) for v in s.split(",")],
        default=[1],
        help="lag: rounds between a block's partials and its store pass",
    )
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--shape", required=True, help="sum: R,X; softmax: B,R,X")
    ap.add_argument(
        "--tile",
        type=lambda s: s.split(","),
        default=["16x256"],
        help="BLOCK_RxBLOCK_X, comma-separated",
    )
    ap.add_argument("--warps", type=lambda s: [int(v) for v in s.split(",")], default=[8])
    ap.add_argument("--maxnreg", type=lambda s: [int(v) for v in s.split(",")], default=[0])
    ap.add_argument("--split", type=lambda s: [int(v) for v in s.split(",")], default=[1])
    ap.add_argument(
        "--per-sm",
        type=lambda s: [int(v) for v in s.split(",")],
        default=[0],
        help="softmax: programs per multiprocessor, looping over column blocks "
        "(0: one program per block)",
    )
    ap.add_argument("--mode", type=lambda s: s.split(","), default=["online"])
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("probe_outer needs a CUDA device", file=sys.stderr)
        return 2
    ceil = measure_ceilings("cuda")["read_gbps"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"read ceiling {ceil:.0f} GB/s, {sms} SMs", flush=True)
    probes = {"sum": probe_sum, "softmax": probe_softmax, "coop": probe_shared, "lag": probe_shared}
    probes[args.kind](args, ceil, sms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
