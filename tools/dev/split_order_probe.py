"""Does the order in which a split reduction's programs walk R matter on the GPU? Sums a
flat tensor with S programs two ways: each program a contiguous chunk of R (as the
reduction kernels do: ``r_lo = pid_s * CHUNK``), or the programs interleaved block by
block (program p takes blocks p, p + S, p + 2S, ...: at any moment the programs read
neighbouring blocks), beside ``torch.sum`` and a copy of the same bytes, in one process.
A measurement tool, not part of the product: ``PYTHONPATH=src:. python
tools/dev/split_order_probe.py``."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _chunks(x, ws, N, CHUNK, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    lo = pid * CHUNK
    for r0 in range(0, CHUNK, BLOCK):
        offs = lo + r0 + tl.arange(0, BLOCK)
        acc += tl.load(x + offs, mask=offs < N, other=0).to(tl.float32)
    tl.store(ws + pid, tl.sum(acc, 0))


@triton.jit
def _interleaved(x, ws, N, S, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid * BLOCK, N, S * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x + offs, mask=offs < N, other=0).to(tl.float32)
    tl.store(ws + pid, tl.sum(acc, 0))


def _ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=60)


def _probe(n: int, dtype: torch.dtype, sms: int) -> None:
    x = torch.randn(n, device="cuda").to(dtype)
    nbytes = x.numel() * x.element_size()
    ref = x.double().sum().item()
    y = torch.empty_like(x)
    t_sum, t_copy = _ms(x.sum), _ms(lambda: y.copy_(x))
    print(
        f"\n{n} {dtype}: torch.sum {nbytes / t_sum / 1e6:.0f} GB/s, "
        f"copy {2 * nbytes / t_copy / 1e6:.0f} GB/s",
        flush=True,
    )
    for block, warps in ((2048, 4), (4096, 8), (4096, 4)):
        for per_sm in (4, 8, 16, 24):
            s = sms * per_sm
            ws = torch.empty(s, device="cuda", dtype=torch.float32)
            chunk = -(-n // s // block) * block
            used = -(-n // chunk)
            runs = {
                "chunks": (_chunks[(used,)], (x, ws, n, chunk), used),
                "interleaved": (_interleaved[(s,)], (x, ws, n, s), s),
            }
            line = f"  block {block} warps {warps} programs {per_sm}/SM:"
            for name, (kernel, args, k) in runs.items():
                kernel(*args, BLOCK=block, num_warps=warps)
                ok = abs(ws[:k].double().sum().item() - ref) < 1e-3 * n**0.5
                ms = _ms(lambda: kernel(*args, BLOCK=block, num_warps=warps))  # noqa: B023
                line += f" {name} {nbytes / ms / 1e6:.0f} GB/s{'' if ok else ' WRONG'}"
            print(line, flush=True)


def main() -> None:
    props = torch.cuda.get_device_properties(0)
    print(props.name, props.multi_processor_count, "SMs", flush=True)
    for n, dtype in (
        (163850 * 2560, torch.float32),
        (5576 * 32000, torch.float32),
        (60 * 64 * 224 * 224, torch.float16),
        (3715 * 117657, torch.bfloat16),
    ):
        _probe(n, dtype, props.multi_processor_count)


if __name__ == "__main__":
    main()
