"""The generated programs that hold a cumsum (``support.program_draws``), run with the
scan tuning at tiny tiles and links of any size, so that their float cumsums run as
chains (mode ``chain``) and their integer ones as loops or splits; outside CI.

``LAYOUTFUSE_CACHE_DIR=/tmp/fc PYTHONPATH=src:tests python tools/dev/fuzz_chain.py LO HI``
(session 29: programs 0-60000, 4576 with a cumsum ran, none failed)."""

from __future__ import annotations

import collections
import sys
import time
import warnings

import layoutfuse.runtime.executor as executor
from layoutfuse.schedulers.tuning import DEFAULT

TINY = dict(
    max_block=2,
    chunk=2,
    chain_chunk=2,
    tile_elements=8,
    outer_rows=2,
    outer_min_bytes=1,
    chain_link_bytes=0,
    sums_block=2,
)


def main(lo: int, hi: int) -> None:
    sys.path.insert(0, "tests")
    warnings.filterwarnings("ignore")
    from support.program_draws import draw_program
    from support.program_steps import check_program

    executor.DEFAULT = DEFAULT.with_fields(scan=TINY)  # every executor made from here on
    out: collections.Counter = collections.Counter()
    t0 = time.time()
    for k in range(lo, hi):
        program = draw_program(k)
        if "cumsum" not in repr(program):
            continue
        try:
            outcome = check_program(program, compile_sm90=False)
        except AssertionError as e:
            outcome = "failed"
            print(f"FAIL program {k}: {str(e)[:3000]}", flush=True)
        except Exception as e:
            outcome = "error"
            print(f"ERROR program {k}: {type(e).__name__}: {str(e)[:3000]}", flush=True)
        out[outcome] += 1
        if sum(out.values()) % 50 == 0:
            print(k, dict(out), f"{time.time() - t0:.0f}s", flush=True)
    print("done", dict(out), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
