"""Speculative decoding (vLLM's n-gram drafter) against the plain engine, every tiny family x profile: greedy tokens
equal at batch 1, at batch 32 with a chunked prompt, and on a prefix-cache hit (tests/vllm/spec_matrix.py). Prints a
line per cell and writes a JSON report; exits non-zero if any cell differs. CI runs a slice
(tests/vllm/test_spec_matrix.py).

    .venv/bin/python scripts/spec_matrix.py --report benchmarks/data/spec_matrix.json
    .venv/bin/python scripts/spec_matrix.py --families gemma3 --profiles reference
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TT_BACKEND", "sim")


def main() -> int:
    from tests.models.tiny import FAMILIES, MOE_FAMILIES
    from tests.vllm.spec_matrix import PROFILES, run

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=",".join([*FAMILIES, *MOE_FAMILIES]))
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--report", type=Path)
    a = ap.parse_args()
    cells = []
    with tempfile.TemporaryDirectory() as root:
        for family in a.families.split(","):
            for profile in a.profiles.split(","):
                try:
                    cell = run(family, profile, Path(root))
                except Exception as e:  # a cell that cannot run is a failure of that cell, not of the matrix
                    cell = {"family": family, "profile": profile, "ok": False, "error": repr(e)[:500],
                            "traceback": traceback.format_exc()[-2000:]}
                cells.append(cell)
                print(json.dumps({k: v for k, v in cell.items() if k != "traceback"}), flush=True)
    report = {"benchmark": "spec_decode_greedy_matrix", "cells": cells,
              "passed": sum(c["ok"] for c in cells), "total": len(cells)}
    if a.report:
        a.report.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['passed']}/{report['total']} cells equal")
    return 0 if report["passed"] == report["total"] else 1


if __name__ == "__main__":
    sys.exit(main())
