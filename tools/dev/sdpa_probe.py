"""torch's attention backends on nanoGPT-like shapes: which one torch's dispatch picks
(``aten._fused_sdp_choice``), each backend's forward and backward time (CUDA events, L2
emptied: ``harness.time_kernel``), and the shapes, dtypes and strides of what each returns
(the logsumexp and the philox state a backward takes). A measurement tool, not the product.
``PYTHONPATH=src:. python tools/dev/sdpa_probe.py``."""

from __future__ import annotations

import torch

from benchmarks.harness import time_kernel

A = torch.ops.aten


def desc(t):
    if not isinstance(t, torch.Tensor):
        return repr(t)
    return f"{tuple(t.shape)} {str(t.dtype)[6:]} {t.stride()} {t.device.type}"


def backends(q, k, v, causal):
    scale = q.shape[-1] ** -0.5

    def flash():
        r = A._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, scale=scale)
        return r[0], r[1], r

    def cudnn():
        r = A._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, scale=scale)
        return r[0], r[1], r

    def efficient():
        r = A._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal, scale=scale)
        return r[0], r[1], r

    def flash_bwd(g, o, lse, r):
        L, S = q.shape[2], k.shape[2]
        return A._scaled_dot_product_flash_attention_backward(
            g, q, k, v, o, lse, None, None, L, S, 0.0, causal, r[6], r[7], scale=scale
        )

    def cudnn_bwd(g, o, lse, r):
        return A._scaled_dot_product_cudnn_attention_backward(
            g, q, k, v, o, lse, r[6], r[7], None, r[2], r[3], r[4], r[5], 0.0, causal,
            scale=scale,
        )  # fmt: skip

    def efficient_bwd(g, o, lse, r):
        return A._scaled_dot_product_efficient_attention_backward(
            g, q, k, v, None, o, lse, r[2], r[3], 0.0, [True, True, True, False], causal,
            scale=scale,
        )  # fmt: skip

    return {"flash": (flash, flash_bwd), "cudnn": (cudnn, cudnn_bwd),
            "efficient": (efficient, efficient_bwd)}  # fmt: skip


def main() -> None:
    dev = "cuda"
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for B, H, L, E, causal in ((8, 12, 1024, 64, True), (8, 16, 1000, 128, True),
                                   (4, 32, 2048, 128, False)):  # fmt: skip
            q, k, v = (torch.randn(B, H, L, E, device=dev, dtype=dtype) for _ in range(3))
            g = torch.randn_like(q)
            choice = A._fused_sdp_choice(q, k, v, None, 0.0, causal, scale=None)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            print(f"{str(dtype)[6:]} {[B, H, L, E]} causal={causal} torch picks {choice}")
            for name, (fwd, bwd) in backends(q, k, v, causal).items():
                try:
                    o, lse, r = fwd()
                    err = (o.float() - ref.float()).abs().max().item()
                    fms = time_kernel(fwd, dev)
                    dq, dk, dv = bwd(g, o, lse, r)[:3]
                    bms = time_kernel(lambda b=bwd, a=(g, o, lse, r): b(*a), dev)
                    print(
                        f"  {name:9} fwd {fms * 1e3:7.1f} us bwd {bms * 1e3:7.1f} us err {err:.2e}"
                    )
                    print(f"    out {desc(o)} lse {desc(lse)}")
                    print(f"    rest {[desc(x) for x in r[2:]]}")
                except Exception as e:  # a backend that refuses these operands
                    print(f"  {name:9} fails: {type(e).__name__}: {str(e)[:200]}")


if __name__ == "__main__":
    main()
