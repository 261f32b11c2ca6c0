"""The seed's cases, end to end: ``python -m layoutfuse.demo``.

Runs nvFuser issue #2202's fusions (see ``shared/seeds``) on the GPU when there is
one, else on the CPU through Triton's interpreter at reduced sizes, checks each
against eager PyTorch, and prints the schedule layoutfuse chose: the input's
layout decides inner vs outer, the output's layout only the store.
"""

from __future__ import annotations

import argparse
import time

import torch

from .testing_api import (
    Fusion,
    FusionExecutorCache,
    FusionGuard,
    make_contig_concrete_tensor,
    permute,
    reshape,
    sum,
)


def _schedule_summary(params: list) -> str:
    return "; ".join(
        f"{p.scheduler}:{getattr(p, 'family', '')} pattern={p.pattern} "
        f"split={getattr(p, 'split', 1)}"
        for p in params
    )


def permuted_reshape(scale: int, pin_output: bool):
    b, h, s, d = 16 // scale, 12 // min(scale, 4), 128 // scale, 192 // scale
    fusion = Fusion()
    with FusionGuard(fusion):
        tin = make_contig_concrete_tensor([b, h, s, d])
        tin.set_allocation_domain([tin.axis(0), tin.axis(2), tin.axis(1), tin.axis(3)], True)
        dqkv = reshape(permute(tin, [0, 2, 1, 3]), [b, s, h, d], [b, s, h * d])
        out = sum(dqkv, [0, 1])
        if pin_output:
            out.set_allocation_domain([out.axis(2), out.axis(0), out.axis(1)], True)
        fusion.add_input(tin)
        fusion.add_output(out)
    x = torch.randn(b * h * s * d).as_strided((b, h, s, d), (s * h * d, d, h * d, 1))
    ref = lambda t: t.permute(0, 2, 1, 3).reshape(b, s, h * d).sum((0, 1))  # noqa: E731
    return fusion, x, ref


def playground(shape, alloc, dims):
    fusion = Fusion()
    with FusionGuard(fusion):
        tin = make_contig_concrete_tensor(list(shape))
        if alloc is not None:
            tin.set_allocation_domain([tin.axis(i) for i in alloc], True)
        out = sum(tin, list(dims))
        fusion.add_input(tin)
        fusion.add_output(out)
    order = alloc or list(range(len(shape)))
    phys = torch.randn([shape[i] for i in order])
    inv = [order.index(i) for i in range(len(shape))]
    x = phys.permute(inv)
    return fusion, x, lambda t: t.sum(tuple(dims))


def cases(gpu: bool):
    """The seed's cases at its sizes on the GPU; on the CPU (the interpreter) smaller, and
    each label gives the size that runs."""
    s = 1 if gpu else 8
    for pinned in (True, False):
        fusion, x, ref = permuted_reshape(s, pinned)
        how = "output alloc [i2, r0, r1]" if pinned else "no output alloc"
        yield f"ReductionOnPermutedReshape {list(x.shape)} ({how})", fusion, x, ref
    p = (16, 1024 // s, 1024 // s)
    yield f"PlayGround [{p[0]},{p[1]},{p[2]}] sum{{0,1}}", *playground(p, None, (0, 1))
    yield (
        f"PlayGround [{p[0]},{p[1]},{p[2]}] alloc [2,0,1] sum{{0,1}}",
        *playground(p, [2, 0, 1], (0, 1)),
    )
    m, n = (16 * 1024, 1024 * 36) if gpu else (256, 576)
    yield f"PlayGround column-major [{m},{n}] sum{{1}}", *playground((m, n), [1, 0], (1,))
    yield f"PlayGround_ref row-major [{n},{m}] sum{{0}}", *playground((n, m), None, (0,))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cpu", action="store_true", help="use the CPU interpreter even with a GPU")
    args = ap.parse_args(argv)
    gpu = torch.cuda.is_available() and not args.cpu
    device = "cuda" if gpu else "cpu"
    print(f"layoutfuse demo on {device}" + ("" if gpu else " (Triton interpreter, small sizes)"))
    ok = True
    for name, fusion, x, ref in cases(gpu):
        x = x.to(device)
        fec = FusionExecutorCache(fusion)
        (out,) = fec.run_fusion_with_inputs([x])
        expect = ref(x)
        good = torch.allclose(out, expect, rtol=1e-4, atol=1e-3 * max(1.0, x.numel() ** 0.5 / 100))
        ok &= good
        line = f"{'ok ' if good else 'BAD'} {name}: out{tuple(out.shape)} strides {out.stride()}"
        line += f"\n    schedule: {_schedule_summary(fec.last_schedule())}"
        if gpu:
            for _ in range(3):
                fec.run_fusion_with_inputs([x])
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(10):
                fec.run_fusion_with_inputs([x])
            torch.cuda.synchronize()
            ms = (time.perf_counter() - t0) / 10 * 1e3
            gbs = (x.numel() * x.element_size() + out.numel() * out.element_size()) / ms / 1e6
            line += f"\n    {ms:.3f} ms end to end, {gbs:.0f} GB/s"
        print(line, flush=True)
    print("all cases match eager PyTorch" if ok else "SOME CASES DO NOT MATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
