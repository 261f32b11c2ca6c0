"""Session 29: cumsum's mode chain against loop/split (``scan.chain_links=0``) across
shapes the ops suite lacks, layoutfuse alone, kernel time (``harness.time_kernel``,
L2 emptied by a read before each call) and % of a copy of the same bytes.

``python tools/dev/chain_ab.py OUT.json`` on a GPU; each line: shape, dim, dtype, the
mode each tuning chose, us and % of copy."""

from __future__ import annotations

import json
import sys

import torch

from benchmarks.harness import time_kernel
from layoutfuse.nvfuser import FusionDefinition
from layoutfuse.schedulers.tuning import DEFAULT

CASES = [  # (shape, dim): row-major, the scanned dim
    ((8192, 4096), 0),
    ((2048, 16384), 0),
    ((16384, 8192), 0),
    ((1024, 4096), 0),
    ((4096, 256), 0),
    ((65536, 1024), 0),
    ((3000, 7000), 0),
    ((64, 512, 64), 1),
    ((1024, 65536), 1),
    ((64, 65536), 1),
    ((8192, 8192), 1),
    ((100000, 5000), 1),
    ((4, 131072), 1),
    ((32, 32768), 1),
    ((256, 12000), 1),
]
TUNINGS = {"chain": DEFAULT, "no_chain": DEFAULT.with_fields(scan=dict(chain_links=0))}


def main(out: str) -> None:
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for shape, dim in CASES:
            x = torch.randn(shape, device="cuda").to(dtype)
            y = torch.empty_like(x)
            copy = time_kernel(lambda x=x, y=y: y.copy_(x), "cuda")
            row = {"shape": shape, "dim": dim, "dtype": str(dtype), "copy_ms": copy}
            want = torch.cumsum(x.float(), dim)
            for name, tuning in TUNINGS.items():
                with FusionDefinition() as fd:
                    fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), dim))
                fd.executor().configure(tuning=tuning)
                (got,) = fd.execute([x])
                err = (got.float() - want).abs().max().item() / max(1.0, want.abs().max().item())
                sched = fd.executor().last_schedule()
                p = sched[0] if isinstance(sched, list) else sched
                ms = time_kernel(lambda fd=fd, x=x: fd.execute([x]), "cuda")
                row[name] = {
                    "ms": ms,
                    "mode": p.mode,
                    "tile": [p.block_r, p.block_n],
                    "warps": p.num_warps,
                    "rel_err": err,
                }
            c, n = row["chain"], row["no_chain"]
            print(
                f"{str(dtype)[6:]:9} {str(shape):18} dim{dim} copy {copy * 1e3:6.1f} us | "
                f"{c['mode']:5} {c['ms'] * 1e3:7.1f} us {copy / c['ms'] * 100:4.0f}% | "
                f"{n['mode']:5} {n['ms'] * 1e3:7.1f} us {copy / n['ms'] * 100:4.0f}% | "
                f"{n['ms'] / c['ms']:.2f}x err {c['rel_err']:.1e}",
                flush=True,
            )
            rows.append(row)
            with open(out, "w") as f:  # after each case: a timeout keeps what ran
                json.dump({"rows": rows, "device": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
