#!/usr/bin/env bash
# GPU probe 22 (session 6): exp as exp2(x * log2 e) (ex2.approx.ftz.f32) against tl.exp
# (ex2.approx.f32 plus ptxas's range fix-up): the normalization suite, layoutfuse alone,
# the working tree (src) against an export of commit OLD (probe_old/src), alternated.
old=${1:?old commit}
for round in 1 2; do
  for v in probe_old/src src; do
    tag=$([ $v = src ] && echo new || echo $old)
    PYTHONPATH=$PWD/$v timeout 200 python3 -m layoutfuse.bench normalization --systems layoutfuse \
      --out /tmp/n-$tag-$round.json 2>&1 | grep -v "^\[\|Warn\|warn" | tail -n 3
  done
done
python3 - "$old" <<'PY' | tee $OUT/probe-exp2-$1.txt
import json, sys
old = sys.argv[1]
rows = {}
for tag in (old, "new"):
    for r in (1, 2):
        d = json.load(open(f"/tmp/n-{tag}-{r}.json"))
        ceil = d["ceilings"]["read_gbps"]
        for row in d["rows"]:
            rows.setdefault(row["case"], {}).setdefault(tag, []).append(100 * row["layoutfuse"]["gbps"] / ceil)
print(f"{'case':<48} {old:>14} {'exp2':>14}  (% of the read ceiling, rounds 1 and 2)")
for case, v in rows.items():
    f = lambda xs: "/".join(f"{x:.1f}" for x in xs)
    print(f"{case:<48} {f(v[old]):>14} {f(v['new']):>14}")
PY
