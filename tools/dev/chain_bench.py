"""GPU: the chained one-pass cumsum prototype against torch's cumsum and a copy."""

import sys

import torch
import triton

sys.path.insert(0, "tools/dev")
from chain_proto import chained


def t_ms(fn, reps=30):
    flush = torch.empty(200 * 2**20 // 4, device="cuda")
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        flush.add_(1)
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def bench(name, x, dim, configs):
    xt = x.movedim(dim, -1)
    R = xt.numel() // xt.shape[-1]
    x2 = xt.reshape(R, xt.shape[-1])
    N = x2.shape[1]
    y2 = torch.empty_like(x2)
    ref = torch.cumsum(x.float(), dim).to(x.dtype)
    copy = t_ms(lambda: y2.copy_(x2))
    eager = t_ms(lambda: torch.cumsum(x, dim))
    print(
        f"{name} {tuple(x.shape)} {x.dtype} dim{dim}: copy {copy * 1e3:.1f} us, eager {eager * 1e3:.1f} us",
        flush=True,
    )
    for BR, BN, W in configs:
        chunks = triton.cdiv(N, BN)
        flags = torch.zeros(1 + max(1, chunks - 1) * R, dtype=torch.int64, device="cuda")
        grid = (triton.cdiv(R, BR) * chunks,)

        def f(grid=grid, flags=flags, chunks=chunks, BR=BR, BN=BN, W=W):
            chained[grid](
                x2, y2, flags, R, N, x2.stride(0), x2.stride(1), chunks, BR, BN, num_warps=W
            )

        try:
            ms = t_ms(f)
            err = (y2.float() - ref.movedim(dim, -1).reshape(R, N).float()).abs().max().item()
            left = flags.abs().sum().item()
            print(
                f"  BR {BR} BN {BN} W {W}: {ms * 1e3:.1f} us = {copy / ms * 100:.0f}% of copy, err {err:.3g}, flags left {left}",
                flush=True,
            )
        except Exception as e:
            print("  fail", BR, BN, W, str(e)[:200], flush=True)


torch.manual_seed(0)
outer = [
    (16, 256, 8),
    (16, 256, 4),
    (32, 128, 4),
    (16, 512, 8),
    (32, 256, 8),
    (64, 64, 4),
    (8, 512, 4),
]
rows = [(1, 2048, 8), (2, 2048, 8), (1, 4096, 8), (4, 1024, 8), (1, 1024, 4)]
for dt in (torch.float32, torch.bfloat16):
    bench("dim0", torch.randn(8192, 4096, device="cuda").to(dt), 0, outer)
    bench("colmajor", torch.randn(8192, 4096, device="cuda").to(dt).t(), 1, outer)
    bench("long_rows", torch.randn(1024, 65536, device="cuda").to(dt), 1, rows)
    bench(
        "split_rows", torch.randn(4, 2**24, device="cuda").to(dt), 1, [(1, 4096, 8), (1, 8192, 16)]
    )
