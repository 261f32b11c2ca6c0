#!/usr/bin/env bash
# GPU run 15 (session 5): the reduction and normalization suites with their peers at COMMIT
# (bf16 outer sums never on 512-byte rows; larger outer looped tiles for few column blocks).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 560 tools/gpu-bench $OUT $commit reduction normalization
