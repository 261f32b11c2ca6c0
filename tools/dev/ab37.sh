#!/usr/bin/env bash
# Session 24's first device call, diagnoses for issue 16's small losing cases and issue
# 14's odd-width bf16 cat: (1) each kernel's device time on layoutfuse, eager and
# torch.compile (tools/dev/peer_kernels.py) for seed 2's small cases behind torch.compile
# by about 1 us, with Inductor's generated code (TORCH_LOGS=output_code) beside ours;
# (2) params variants (python -m benchmarks tune, each kernel's time) of a flat copy, the rule
# pointwise.whole_y_to_x on the five random cases it changes,
# (r2_055, r2_076), a transpose (r2_000, r2_013) and the pinned fp16 sum r2_106; (3) the
# ops suite's cat and gathers under tile sizes (tools/dev/tune_ops.py). Carry .wheels
# (unused). About 330 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TORCH_LOGS=output_code timeout 150 python3 tools/dev/peer_kernels.py r2_055 r2_076 r2_000 r2_013 r2_106 r2_112 r2_031 \
  > $out/peer-kernels-$day-$commit-$gpu.txt 2> $out/inductor-code-$day-$commit-$gpu.txt
echo "peers rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/peer-kernels-$day-$commit-$gpu.txt | cut -c1-260
TUNE_LOG=tune-ab37 TUNE_S=${TUNE_S:-45}
flat="--variant block_x=1024 --variant block_x=512,num_warps=8 --variant block_x=512 --variant block_x=2048 --variant block_x=4096,num_warps=8 --variant block_x=1024,num_warps=2 --variant block_x=1024,num_warps=8 --variant full_blocks=false"
run_tune r2_055 $flat
run_tune r2_076 --variant block_x=2048 --variant block_x=1024,num_warps=8 --variant block_x=512,num_warps=8 --variant block_x=1024 --variant block_x=4096 --variant block_x=8192,num_warps=8 --variant block_x=2048,num_warps=8 --variant full_blocks=false
run_tune r2_000 --variant "" --variant block_x=1024,block_y=4,num_warps=8 --variant block_x=512,block_y=4,num_warps=8 --variant block_x=512,block_y=4 --variant block_x=128,block_y=4 --variant block_x=256,block_y=4 --variant block_x=256,block_y=4,num_warps=8 --variant block_x=64,block_y=4,num_warps=2 --variant y_first=false
run_tune r2_013 --variant "" --variant block_x=256,block_y=8 --variant block_x=256,block_y=8,num_warps=2 --variant block_x=128,block_y=8 --variant block_x=256,block_y=8,num_warps=8 --variant block_x=64,block_y=8,num_warps=2 --variant block_x=32,block_y=8,num_warps=2 --variant y_first=false
t0=$(date +%s)  # the rule pointwise.whole_y_to_x on the random cases whose plan it changes (tools/dev/diffplans.py)
LAYOUTFUSE_MEASURE=0 timeout 80 python3 -m benchmarks tune r1_054 r1_087 r2_000 r2_013 r3_104 --profile --tuning "" --tuning pointwise.whole_y_to_x=1 2>&1 | grep -v "Warn\|warn" | tee -a $out/tune-ab37-$day-$commit-$gpu.txt | cut -c1-250
echo "tune whole_y_to_x rc=$? $(( $(date +%s) - t0 )) s"
run_tune r2_106 --variant "" --variant block_r=16 --variant block_r=64 --variant num_warps=8 --variant block_r=16,unroll=1 \
  --variant unroll=1 --variant unroll=4,block_r=8 --variant split=2 --variant block_x=64,block_r=64
rm -rf /tmp/lfcache
for f in cat2_inner_odd embedding_fwd; do
  t0=$(date +%s)
  LAYOUTFUSE_MEASURE=0 timeout 80 python3 tools/dev/tune_ops.py $out/tune-ops-$f-$day-$commit-$gpu.json --peers --filter $f \
    pointwise.tile_bytes=4096 pointwise.tile_bytes=2048 pointwise.tile_bytes=2048,pointwise.gather_tile_elements=512 \
    pointwise.tile_bytes=8192 pointwise.warps=2048:8/512:4/0:2 > $out/tune-ops-ab37-$f.txt 2>&1
  echo "tune ops $f rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/tune-ops-ab37-$f.txt | cut -c1-200 | tail -14
  cat $out/tune-ops-ab37-$f.txt >> $out/tune-ops-ab37-$day-$commit-$gpu.txt; rm $out/tune-ops-ab37-$f.txt
done
