#!/usr/bin/env bash
# Session 27's second call: the whole suite with CUDA tensors (16 shards; the split sums
# on two streams at once among them). Carry .wheels. About 300 s.
PART=c OUT=$OUT COMMIT=$COMMIT LIMIT=${TESTS_S:-300} bash "$(dirname "$0")/../gpu-run.sh"
