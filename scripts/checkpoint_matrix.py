"""The checkpoint matrix on the simulator, every entry: each real checkpoint of tt_models/configs/checkpoints.yaml x
hardware profile x target (tt_checks.matrix: the one-chip devices it fits, else the mesh it needs) built with its real
widths and random weights, prefilled (whole and chunked) and decoded traced at 32 users against HF. Prints a line per
cell and writes a JSON report; exits non-zero if any cell falls below its PCC threshold or fails to run.

    .venv/bin/python scripts/checkpoint_matrix.py --report benchmarks/data/checkpoint_matrix_sim.json
    .venv/bin/python scripts/checkpoint_matrix.py --report benchmarks/data/checkpoint_matrix_sim.json --resume
    .venv/bin/python scripts/checkpoint_matrix.py --checkpoints Qwen2.5-7B-Instruct --profiles performance

CI runs a slice (tests/models/test_checkpoint_matrix.py); the real-ttnn side of the matrix is
`scripts/check_real_ttnn.sh --checkpoints all` (op calls and capacity, docs/checkpoint-matrix.md)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TT_BACKEND", "sim")


def layers_for(ckpt) -> int:
    """Two layers (the residual handed from layer to layer) where each of the first two is small; one for the widest
    models and where either has more than 1.5B parameters (Qwen2-57B-A14B's MoE layer has 2.0B: two of them, in HF's
    fp32 beside the simulator's copy, outgrow a 24 GiB host; Mixtral-8x7B's 1.45B run two). GLM-4.5-Air's first
    layer is dense and its second has 2.2B (killed for memory at two layers): its one layer is the dense one, so its
    cells hold its attention (96 heads, RoPE on half of each head) at real widths, not its experts."""
    from tt_models.model_args import ModelArgs
    from tt_models.weights import meta_shapes

    if ckpt.config["hidden_size"] > 4096:
        return 1
    shapes = meta_shapes(ModelArgs.from_hf_config(ckpt.hf_config(n_layers=2)))
    params = [sum(math.prod(s) for name, s in shapes.items() if name.startswith(f"layers.{i}.")) for i in (0, 1)]
    return 2 if max(params) <= 1.5e9 else 1


def key(row: dict) -> tuple[str, str, str]:
    return row["checkpoint"], row["profile"], row["target"]


def main(argv: list[str]) -> int:
    from tests.models.checkpoint_matrix import clear, run
    from tt_checks.matrix import targets
    from tt_models.config.checkpoints import find_checkpoint, load_checkpoints
    from tt_models.config.optimizations import hardware_profiles

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", default="all", help="comma list (hub ids or last parts) or all")
    p.add_argument("--profiles", default="all", help="comma list of hardware profiles or all")
    p.add_argument("--targets", help="only these targets (e.g. N150,T3K 2x4)")
    p.add_argument("--report", help="JSON report path; rows of an existing report that this run does not redo are kept "
                                    "(a slice at a time: e.g. one-chip targets, then the meshes)")
    p.add_argument("--resume", action="store_true", help="skip the cells the report already holds as passed")
    p.add_argument("--rejudge", action="store_true",
                   help="run nothing on the simulator: judge the report's failed cells again from their recorded "
                        "PCCs (a mixture-of-experts comparison below threshold at a router near-tie of HF's)")
    a = p.parse_args(argv)
    if a.rejudge:
        return rejudge(Path(a.report))
    names = list(load_checkpoints()) if a.checkpoints == "all" else a.checkpoints.split(",")
    profiles = hardware_profiles() if a.profiles == "all" else a.profiles.split(",")
    only = set(a.targets.split(",")) if a.targets else None
    rows, failed = [], 0
    kept = {key(r): r for r in json.loads(Path(a.report).read_text())["rows"]} if a.report and Path(
        a.report).exists() else {}
    for name in names:
        ckpt = find_checkpoint(name.strip())
        root = Path(tempfile.mkdtemp(prefix="tt_matrix_"))
        os.environ["TT_VLLM_CACHE"] = str(root / "tt_cache")
        try:
            for profile in profiles:
                for target in targets(ckpt.hf_config(), profile):
                    if only and target.name not in only:
                        continue
                    if a.resume and kept.get((ckpt.hub_id, profile, target.name), {}).get("pass"):
                        continue
                    try:
                        r = run(ckpt, profile, target, root, layers_for(ckpt))
                    except Exception as e:  # reported as a failed cell, the matrix goes on
                        r = {"checkpoint": ckpt.hub_id, "profile": profile, "target": target.name, "pass": False,
                             "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
                    rows.append(r)
                    failed += not r["pass"]
                    shown = (f"min PCC {r['min_pcc']:.4f} (>= {r['threshold']}), {r['seconds']} s" if "min_pcc" in r
                             else r["error"][:400])
                    print(f"{'ok  ' if r['pass'] else 'FAIL'} {ckpt.short_name}/{profile} on {target.name}: {shown}",
                          flush=True)
                    if a.report:
                        kept[key(r)] = r
                        Path(a.report).write_text(json.dumps({"rows": list(kept.values())}, indent=1) + "\n")
        finally:
            clear(root)
    print(f"checkpoint matrix (simulator): {len(rows)} cells, {len(rows) - failed} pass, {failed} fail")
    return 1 if failed else 0


def rejudge(report: Path) -> int:
    """tests.models.checkpoint_matrix.judge over the report's failed rows, HF rebuilt from the same seed."""
    from tests.models.checkpoint_matrix import clear, is_moe, judge, make_checkpoint
    from tt_models.config.checkpoints import find_checkpoint

    rows = json.loads(report.read_text())["rows"]
    for r in rows:
        if r.get("pass") or "min_pcc" not in r:
            continue
        ckpt = find_checkpoint(r["checkpoint"])
        root = Path(tempfile.mkdtemp(prefix="tt_matrix_"))
        try:
            judge(r, make_checkpoint(ckpt, root, r["layers"], r["vocab"]), is_moe(ckpt.hf_config()))
        finally:
            clear(root)
        print(f"{'ok  ' if r['pass'] else 'FAIL'} {ckpt.short_name}/{r['profile']} on {r['target']}: min PCC "
              f"{r['min_pcc']:.4f}, router near-ties {r.get('router_near_ties', {})}, not excused "
              f"{r.get('router_gaps_not_excused', {})}", flush=True)
    report.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0 if all(r.get("pass") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
