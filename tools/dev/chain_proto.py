import sys

import torch
import triton
import triton.language as tl


@triton.jit
def chained(x, y, flags, ROWS, N, sr, sn, CHUNKS, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    ROW_TILES = tl.cdiv(ROWS, BLOCK_R)
    t = tl.atomic_add(flags, 1, sem="relaxed", scope="gpu")
    if t == ROW_TILES * CHUNKS - 1:
        tl.atomic_xchg(flags, 0, sem="relaxed", scope="gpu")
    chunk = t // ROW_TILES
    rt = t % ROW_TILES
    rows = rt * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < ROWS
    cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = rmask[:, None] & (cols < N)[None, :]
    off = rows[:, None] * sr + cols[None, :] * sn
    acc = tl.where(mask, tl.load(x + off, mask=mask, other=0).to(tl.float32), 0)
    agg = tl.sum(acc, axis=1)
    carry = tl.zeros([BLOCK_R], tl.float32)
    if chunk > 0:
        fp = flags + 1 + (chunk - 1) * ROWS + rows
        word = tl.zeros([BLOCK_R], tl.int64)
        need = rmask
        while tl.max(need.to(tl.int32), axis=0) > 0:
            got = tl.atomic_xchg(fp, 0, mask=need, sem="acquire", scope="gpu")
            word = tl.where(need, got, word)
            need = need & (got == 0)
        carry = (word & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    if chunk < CHUNKS - 1:
        inc = (carry + agg).to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
        tl.atomic_xchg(
            flags + 1 + chunk * ROWS + rows, inc | (1 << 32), mask=rmask, sem="release", scope="gpu"
        )
    res = tl.cumsum(acc, axis=1) + carry[:, None]
    tl.store(y + off, res.to(y.dtype.element_ty), mask=mask)


def run(x, dim, BR, BN):
    xt = x.movedim(dim, -1)
    R = xt.numel() // xt.shape[-1]
    x2 = xt.reshape(R, xt.shape[-1])
    y2 = torch.empty_like(x2)
    N = x2.shape[1]
    chunks = triton.cdiv(N, BN)
    flags = torch.zeros(1 + max(1, (chunks - 1)) * R, dtype=torch.int64, device=x.device)
    grid = (triton.cdiv(R, BR) * chunks,)
    chained[grid](x2, y2, flags, R, N, x2.stride(0), x2.stride(1), chunks, BR, BN)
    assert flags.abs().sum().item() == 0, flags
    return y2


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    torch.manual_seed(0)
    for shape, BR, BN in [((37, 1000), 16, 64), ((5, 4099), 2, 256), ((300, 17), 16, 4)]:
        x = torch.randn(shape, device=dev)
        y = run(x, 1, BR, BN)
        ref = torch.cumsum(x.double(), 1).float()
        print(shape, (y - ref).abs().max().item())
