"""Try hand-written corpus cases on both ttnns while writing them, without re-recording the whole corpus.

    # under the real ttnn (in .venv-ttnn, as scripts/check_real_ttnn.sh sets it up): record the real verdicts
    .venv-ttnn/bin/python -m tt_checks.try_cases record cases_eltwise [--match NAME_PREFIX]
    # under the simulator (.venv): replay them and print every disagreement
    .venv/bin/python -m tt_checks.try_cases compare cases_eltwise [--match NAME_PREFIX]

`cases_eltwise` names a module of tt_checks (or `corpus_cases` for all) whose `cases()` yields (name, call). The
real verdicts go to .cache/try_cases/<module>.json. `scripts/check_real_ttnn.sh --corpus` records the committed
fixture from all of them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from tt_checks.corpus import run_call

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / ".cache" / "try_cases"


def _cases(module: str, match: str | None) -> list[tuple[str, dict]]:
    mod = importlib.import_module(f"tt_checks.{module}")
    return [(n, c) for n, c in mod.cases() if match is None or n.startswith(match)]


def record(module: str, match: str | None) -> int:
    os.environ.setdefault("TT_METAL_MOCK_CLUSTER_DESC_PATH", str(ROOT / "tt_checks" / "mock_device" / "clusters"
                                                                   / "N150.yaml"))
    import ttnn

    dev = ttnn.open_device(device_id=0)
    rows = [{"name": n, "call": c, "verdict": run_call(ttnn, dev, c)} for n, c in _cases(module, match)]
    ttnn.close_device(dev)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{module}.json"
    path.write_text(json.dumps(rows, indent=0))
    ok = sum(r["verdict"]["ok"] for r in rows)
    print(f"{len(rows)} cases, real ttnn accepts {ok}, rejects {len(rows) - ok} -> {path.relative_to(ROOT)}")
    for r in rows:
        v = r["verdict"]
        print(f"  {r['name']}: " + (f"ok {json.dumps(v['out'])[:300]} {v.get('alloc')}" if v["ok"]
                                     else f"REJECTS {v['error'][:300]}"))
    return 0


def compare(module: str, match: str | None) -> int:
    import ttnn_sim as ttnn

    rows = json.loads((OUT / f"{module}.json").read_text())
    dev = ttnn.open_device(device_id=0)
    bad = 0
    for r in rows:
        if match is not None and not r["name"].startswith(match):
            continue
        real, sim = r["verdict"], run_call(ttnn, dev, r["call"])
        same = real["ok"] == sim["ok"] and (not real["ok"] or (real["out"] == sim["out"]
                                                                and real.get("alloc") == sim.get("alloc")))
        if not same:
            bad += 1
            print(f"{r['name']}:\n  real " + (f"ok {json.dumps(real['out'])} {real.get('alloc')}" if real["ok"]
                                               else f"REJECTS {real['error']}")
                  + "\n  sim  " + (f"ok {json.dumps(sim['out'])} {sim.get('alloc')}" if sim["ok"]
                                   else f"REJECTS {sim['error']}"))
    ttnn.close_device(dev)
    print(f"{len(rows) - bad} of {len(rows)} agree")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m tt_checks.try_cases", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("record", "compare"))
    p.add_argument("module")
    p.add_argument("--match")
    a = p.parse_args(argv)
    return (record if a.action == "record" else compare)(a.module, a.match)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
