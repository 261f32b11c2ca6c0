import contextlib
import io
import json
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from plan import plan

from benchmarks.random_cases import draw_cases

out = {}
for seed in (1, 2, 3):
    for c in draw_cases(seed, 120, "cuda"):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                rec = plan(c)
            out[c.name] = [repr(p) for p in rec.params] + [
                repr(l.meta) + str(getattr(l, "grid", None)) for l in rec.launches
            ]
        except Exception as e:
            out[c.name] = ["ERR " + repr(e)[:200]]
json.dump(out, open(sys.argv[1], "w"), indent=0)
print(len(out), "cases;", sum(1 for v in out.values() if v[0].startswith("ERR")), "errors")
