"""Run the fetched tt-metal unit tests against the simulator and write the pass-rate summary.

    .venv/bin/python tt_checks/tt_metal_unit/run.py                 # every test file in manifest.yaml
    .venv/bin/python tt_checks/tt_metal_unit/run.py --files argmax  # only files whose path contains 'argmax'
    .venv/bin/python tt_checks/tt_metal_unit/run.py --no-write      # print, do not rewrite the committed JSON
    .venv/bin/python tt_checks/tt_metal_unit/run.py --files rotary --merge  # rerun some files, merge into the JSON

Each test file runs in its own pytest process (a crash or an out-of-memory kill costs one file, not the run), with
``ttmetal_sim_plugin`` making ``import ttnn`` the simulator. Results go to benchmarks/data/tt_metal_unit_tests.json:
per file passed / failed / errors / skipped and the failure reasons grouped, plus the totals. Pass rate =
passed / (passed + failed + errors); skips (the tests' own skip logic) are reported apart.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "tt-metal-tests"
OUT = ROOT / "benchmarks" / "data" / "tt_metal_unit_tests.json"


def load_manifest() -> dict:
    return yaml.safe_load((HERE / "manifest.yaml").read_text())


def _normalize(reason: str) -> str:
    """Group reasons that differ only in numbers, shapes or addresses."""
    reason = reason.strip()
    reason = re.sub(r"0x[0-9a-fA-F]+", "0x..", reason)
    reason = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", reason)
    return reason[:220]


def run_file(path: str, timeout_s: float) -> tuple[list[dict], str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE / "standins"), str(CACHE)])
    env["TT_METAL_UNIT_TIMEOUT_S"] = str(timeout_s)
    env.setdefault("TT_BACKEND", "sim")
    with tempfile.NamedTemporaryFile("w+", suffix=".jsonl", delete=False) as report:
        env["TT_METAL_UNIT_REPORT"] = report.name
    cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(CACHE),
           "-p", "ttmetal_sim_plugin", "-q", "-rN", "--tb=line", path]
    start = time.time()
    proc = subprocess.run(cmd, cwd=CACHE, env=env, capture_output=True, text=True)
    wall = time.time() - start
    rows = [json.loads(line) for line in Path(report.name).read_text().splitlines() if line.strip()]
    os.unlink(report.name)
    tail = (proc.stdout + proc.stderr)[-2000:]
    if proc.returncode not in (0, 1) and not rows:
        rows = [{"nodeid": path, "when": "process", "outcome": "error",
                 "reason": f"pytest exited {proc.returncode}: {tail.strip().splitlines()[-1] if tail else ''}"}]
    return rows, tail, wall


def summarize(path: str, rows: list[dict], wall: float) -> dict:
    counts = collections.Counter()
    reasons: dict[str, collections.Counter] = {"failed": collections.Counter(), "error": collections.Counter(),
                                                "skipped": collections.Counter()}
    for row in rows:
        outcome = row["outcome"]
        if outcome == "xfailed":
            outcome = "skipped"
        if outcome == "xpassed":
            outcome = "passed"
        counts[outcome] += 1
        if outcome in reasons:
            reasons[outcome][_normalize(row["reason"])] += 1
    return {
        "path": path,
        "passed": counts["passed"], "failed": counts["failed"], "errors": counts["error"],
        "skipped": counts["skipped"], "wall_s": round(wall, 1),
        "failure_reasons": [{"count": n, "reason": r} for r, n in
                            (reasons["failed"] + reasons["error"]).most_common()],
        "skip_reasons": [{"count": n, "reason": r} for r, n in reasons["skipped"].most_common()],
    }


def write_doc_table(result: dict) -> None:
    """Refresh the per-file table in docs/tt-metal-unit-tests.md (between the table markers)."""
    doc = ROOT / "docs" / "tt-metal-unit-tests.md"
    if not doc.exists():
        return
    lines = ["| file | passed | failed | errors | skipped | main failure reason |", "|---|---:|---:|---:|---:|---|"]
    for f in result["per_file"]:
        top = f["failure_reasons"][0]["reason"].replace("|", "\\|")[:110] if f["failure_reasons"] else ""
        lines.append(f"| `{f['path']}` | {f['passed']} | {f['failed']} | {f['errors']} | {f['skipped']} | {top} |")
    ran = result["passed"] + result["failed"] + result["errors"]
    lines.append(f"| **total ({result['files']} files)** | **{result['passed']}** | **{result['failed']}** | "
                 f"**{result['errors']}** | **{result['skipped']}** | pass rate {result['passed']}/{ran} = "
                 f"{100 * result['pass_rate']:.1f}% |")
    text = doc.read_text()
    start, end = "<!-- table:start -->", "<!-- table:end -->"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(head + start + "\n" + "\n".join(lines) + "\n" + end + tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", default="", help="only test files whose path contains this substring")
    parser.add_argument("--no-write", action="store_true", help="do not rewrite " + str(OUT.relative_to(ROOT)))
    parser.add_argument("--merge", action="store_true",
                        help="with --files: replace (or add) those files' entries in the committed JSON and recompute "
                             "its totals, keeping every other file's recorded counts")
    args = parser.parse_args()

    manifest = load_manifest()
    timeout_s = float(manifest["rules"]["per_test_timeout_s"])
    files = [t["path"] for t in manifest["tests"] if args.files in t["path"]]
    missing = [p for p in files if not (CACHE / p).exists()]
    if missing:
        print("not fetched (run tt_checks/tt_metal_unit/fetch.py first):", *missing, sep="\n  ", file=sys.stderr)
        return 2

    per_file = []
    for path in files:
        rows, tail, wall = run_file(path, timeout_s)
        summary = summarize(path, rows, wall)
        per_file.append(summary)
        print(f"{path}: {summary['passed']} passed, {summary['failed']} failed, {summary['errors']} errors, "
              f"{summary['skipped']} skipped ({wall:.0f} s)", flush=True)
        for r in summary["failure_reasons"][:8]:
            print(f"    {r['count']:4d}  {r['reason'][:160]}", flush=True)

    extra: dict = {}
    if args.merge and args.files and not args.no_write:
        recorded = json.loads(OUT.read_text())
        fresh = {f["path"]: f for f in per_file}
        order = [f["path"] for f in recorded["per_file"]]
        merged = {f["path"]: f for f in recorded["per_file"]} | fresh
        per_file = [merged[p] for p in order] + [fresh[p] for p in fresh if p not in order]
        extra = {k: v for k, v in recorded.items() if k in ("bar_issue_22", "note")}

    totals = {k: sum(f[k] for f in per_file) for k in ("passed", "failed", "errors", "skipped")}
    ran = totals["passed"] + totals["failed"] + totals["errors"]
    rate = totals["passed"] / ran if ran else 0.0
    classes = collections.Counter()
    for f in per_file:
        for r in f["failure_reasons"]:
            classes[r["reason"]] += r["count"]
    result = {
        "repo": manifest["repo"],
        "simulator": "ttnn_sim (mirrors ttnn 0.81.1)",
        "per_test_timeout_s": timeout_s,
        "files": len(per_file),
        "tests": ran + totals["skipped"],
        **totals,
        "pass_rate": round(rate, 4),
        "pass_rate_definition": "passed / (passed + failed + errors); skipped reported separately",
        "top_failure_reasons": [{"count": n, "reason": r} for r, n in classes.most_common(25)],
        "per_file": per_file,
        **extra,
    }
    if args.merge and args.files and not args.no_write:
        OUT.write_text(json.dumps(result, indent=1) + "\n")
    if not args.no_write and not args.files:
        OUT.write_text(json.dumps(result, indent=1) + "\n")
        write_doc_table(result)
    print(f"tt-metal unit tests on the simulator: {totals['passed']}/{ran} passed ({100 * rate:.1f}%), "
          f"{totals['failed']} failed, {totals['errors']} errors, {totals['skipped']} skipped, {len(per_file)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
