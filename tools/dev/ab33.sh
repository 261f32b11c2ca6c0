#!/usr/bin/env bash
# The next session's first device call (written at the end of session 22, not run): the
# Thunder benchmark's nanoGPT rows and the copy probe, which time ea64c25's binding of a
# library result that other outputs view (the SDPA block's last 0.038 ms of copies), then
# the whole suite with CUDA tensors (loop stores, the generated programs' reduced outputs,
# eded723's epilogue fix). Carry .wheels. About 330 s.
. "$(dirname "$0")/device_env.sh"
nanogpt_copies_and_rows 90 100
rm -rf /tmp/lfcache
PART=c OUT=$out COMMIT=$commit LIMIT=280 bash tools/gpu-run.sh
