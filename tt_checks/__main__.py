"""python -m tt_checks: run the models through the real ttnn on mock devices (see scripts/check_real_ttnn.sh).

Each device profile runs in its own process (a mock cluster is chosen once per process, before ttnn opens it); the
parent prints every rejected call as one line and a summary `N calls accepted, M rejected`, and exits non-zero when
any call was rejected or any model code failed to run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tt_checks.report import Call, Rule, summary

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = Path(os.environ.get("TT_MOCK_CLUSTER_DIR", ROOT / "tt_checks" / "mock_device" / "clusters"))
ONE_CHIP_DEVICES = ("N150", "P150")
# Multi-chip mocks (opened with the 1-D fabric, as the vLLM worker opens a mesh) run the models data parallel, one
# replica per chip on submeshes, or with --parallel tp tensor parallel over all their chips (the tiny families widened
# to 8 heads so that 8 chips divide them). Not run by default (minutes per family and profile); CI runs one family
# tensor parallel on the T3K. Their cluster descriptors harvest one tensix row per chip: see the note in N300.yaml.
DATA_PARALLEL_DEVICES = ("N300", "T3K")


def hardware_profiles() -> list[str]:
    from tt_models.config.optimizations import hardware_profiles as profiles

    return profiles()


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="check_real_ttnn.sh", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--devices", default=",".join(ONE_CHIP_DEVICES),
                   help="device profiles to run on; a multi-chip one (" + ", ".join(DATA_PARALLEL_DEVICES) + ") runs "
                        "the models over all its chips, as --parallel says")
    p.add_argument("--parallel", choices=("dp", "tp"), default="dp",
                   help="how a multi-chip device runs the models: dp (one replica per chip) or tp (tensor parallel "
                        "over all its chips, tiny families widened to 8 heads)")
    p.add_argument("--mesh-shape", help="open a multi-chip device's chips as this RxC mesh (e.g. 2x4 for a T3K: with "
                                         "--parallel tp, the two-way split of a 2-D mesh, as on a Galaxy)")
    p.add_argument("--expert-dispatch", choices=("reduce", "all_to_all"), default="reduce",
                   help="how MoE layers split over a mesh reach their experts (additional_config tt.expert_dispatch): "
                        "reduce (every token through each chip's experts) or all_to_all (all_to_all_dispatch / "
                        "all_to_all_combine, 1xN meshes)")
    p.add_argument("--families", help="comma list of model families (tiny test families, smollm2; FAMILY_padded: "
                                       "its tiny model with hidden 480, which no mesh splits into whole tiles); "
                                       "default all, or none with --checkpoints")
    p.add_argument("--profiles", default="all", help="comma list of optimization profiles (default: every "
                                                        "profile meant for hardware)")
    p.add_argument("--max-seq-len", type=int, default=1024)
    p.add_argument("--capacity",
                   help="devices on which to run the capacity cases (SmolLM2 and Llama-3.1-8B's config at batch 32; "
                        "'none' to skip); default N150, or none with --checkpoints")
    p.add_argument("--contexts", default="4096,32768", help="contexts of the capacity cases")
    p.add_argument("--checkpoints", default="none",
                   help="comma list of checkpoints of the checkpoint matrix (hub ids or last parts), or 'all': "
                        "each at its real widths (placed-only weights) on the devices tt_checks.matrix gives it, "
                        "--layers layers for the op calls, every layer for the capacity row; a one-chip device it "
                        "does not fit must refuse it at load")
    p.add_argument("--layers", type=int, default=1, help="layers of a checkpoint's op-call scenario")
    p.add_argument("--any-target", action="store_true",
                   help="with --checkpoints: also run a checkpoint x profile on these devices where it fits but the "
                        "matrix checks it on a smaller one (e.g. gpt-oss-20b's performance rows on a T3K, which an "
                        "N300 holds)")
    p.add_argument("--report", help="write the checkpoint rows (op-call outcomes and capacity) as JSON here")
    p.add_argument("--corpus", action="store_true",
                   help="also record the differential corpus (hand-written cases + every distinct model call) on "
                        "the first device into tests/fixtures/ttnn_corpus_0.81.1.json")
    p.add_argument("--record-capacity", action="store_true",
                   help="write the capacity cases' answers into tests/fixtures/capacity_<device>_0.81.1.json (as "
                        "--corpus does, without re-recording the corpus)")
    p.add_argument("--device-worker", help=argparse.SUPPRESS)  # internal: run one device in this process
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    matrix = args.checkpoints != "none"
    args.families = args.families or ("none" if matrix else "all")
    args.capacity = args.capacity or ("none" if matrix else "N150")
    return args


def _split(value: str, every: list[str]) -> list[str]:
    if value == "none":
        return []
    return every if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


def device_worker(args: argparse.Namespace) -> int:
    """Runs every family x profile on one mock device; writes the calls as JSON to args.out."""
    from tt_checks.mock import open_mock_device
    from tt_checks.scenarios import families, family_model_dir, run_model, splits_over

    device = args.device_worker
    shape = tuple(int(n) for n in args.mesh_shape.lower().split("x")) if args.mesh_shape else None
    ttnn, mesh, rec = open_mock_device(device, CLUSTERS, shape)
    if args.corpus:
        rec.captured = {}
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="tt_checks_tiny_") as tiny_root:
        for family in _split(args.families, families()):
            tp = args.parallel == "tp" and mesh.get_num_devices() > 1
            model_dir = family_model_dir(family, Path(tiny_root), wide=tp)
            rows, cols = tuple(mesh.shape)
            head_groups = rows if rows > 1 and cols > 1 else mesh.get_num_devices()  # 2-D: heads over the rows
            if tp and not splits_over(model_dir, head_groups):
                # SmolLM2's 9 query heads split over no mesh; the TP plan refuses it at load (tested there).
                print(f"{device}/{family}: skipped, its heads do not split over {head_groups} groups of chips",
                      flush=True)
                continue
            for profile in _split(args.profiles, hardware_profiles()):
                rec.scenario = f"{device}/{family}/{profile}"
                rec.reset_peak()
                out = run_model(rec, mesh, family, profile, model_dir, args.max_seq_len,
                                data_parallel=1 if tp else mesh.get_num_devices(),
                                expert_dispatch=args.expert_dispatch)
                outcomes.append({"scenario": out.name, "phases": out.phases, "peak": vars(rec.peak).copy()})
                for c in rec.calls:
                    if not c.accepted and c.scenario.startswith(out.name):
                        print(c.line(), flush=True)
                print(f"{out.name}: " + ", ".join(f"{k} {v}" for k, v in out.phases.items()), flush=True)
    matrix = run_checkpoints(args, rec, ttnn, mesh, device, outcomes) if args.checkpoints != "none" else []
    capacity = []
    if device in _split(args.capacity, list(ONE_CHIP_DEVICES)):
        from tt_checks.capacity import run_all

        captured, rec.captured = rec.captured, None  # model-sized calls stay out of the corpus
        reports = run_all(rec, ttnn, mesh, device, tuple(int(c) for c in args.contexts.split(",")))
        rec.captured = captured
        capacity = [{"case": r.case, "ok": r.ok} for r in reports]
        if args.corpus or args.record_capacity:
            from tt_checks.capacity import record

            record(reports, device)
    if args.corpus:
        from tt_checks.gen_corpus import record

        for op, why in rec.unencodable.items():
            print(f"corpus: calls of {op} not recorded ({why})")
        # Replayed on a fresh simulated device, each call must meet the program cache as it does here: cold (a
        # reshape that moves pages keeps its page map allocated from its first, missing call).
        mesh.clear_program_cache()
        record(ttnn, mesh, device, rec.captured)
    ttnn.close_mesh_device(mesh)
    Path(args.out).write_text(json.dumps({
        "calls": [{"op": c.op, "where": c.where, "scenario": c.scenario, "expected": c.expected,
                   "rule": vars(c.rule) if c.rule else None} for c in rec.calls],
        "outcomes": outcomes,
        "capacity": capacity,
        "matrix": matrix,
    }))
    return 0


def run_checkpoints(args: argparse.Namespace, rec: Any, ttnn: Any, mesh: Any, device: str,
                    outcomes: list) -> list[dict]:
    """The checkpoint matrix on this device: each checkpoint x profile it is a target for runs the vLLM phases at
    --layers layers and loads whole for the capacity row; a one-chip device that is no target must refuse it."""
    from dataclasses import asdict

    from tt_checks.capacity import checkpoint_capacity
    from tt_checks.matrix import Target, fits, targets
    from tt_checks.scenarios import run_model
    from tt_models.config.checkpoints import find_checkpoint, load_checkpoints

    names = list(load_checkpoints()) if args.checkpoints == "all" else args.checkpoints.split(",")
    here = Target(device, tuple(mesh.shape))
    rows = []
    for ckpt in (find_checkpoint(n.strip()) for n in names):
        for profile in _split(args.profiles, hardware_profiles()):
            wanted = here in targets(ckpt.hf_config(), profile) or (
                args.any_target and fits(ckpt.hf_config(), profile, here) is None)
            if not wanted and mesh.get_num_devices() > 1:
                continue  # meshes run what needs them; one chip also shows what it refuses
            row: dict[str, Any] = {"checkpoint": ckpt.hub_id, "profile": profile, "target": here.name}
            if wanted:
                rec.scenario = f"{here.name}/{ckpt.short_name}/{profile}"
                rec.reset_peak()
                out = run_model(rec, mesh, ckpt.short_name, profile, None, args.max_seq_len,
                                cfg=ckpt.hf_config(n_layers=args.layers), load_format="dummy",
                                expert_dispatch=args.expert_dispatch)
                outcomes.append({"scenario": out.name, "phases": out.phases, "peak": vars(rec.peak).copy()})
                for c in rec.calls:
                    if not c.accepted and c.scenario.startswith(out.name):
                        print(c.line(), flush=True)
                print(f"{out.name}: " + ", ".join(f"{k} {v}" for k, v in out.phases.items()), flush=True)
                row["phases"] = out.phases
                mine = [c for c in rec.calls if c.scenario.startswith(out.name)]
                row["calls"] = {"accepted": sum(c.accepted for c in mine),
                                "rejected": sum(not c.accepted for c in mine)}
            first = len(rec.calls)
            cap = checkpoint_capacity(rec, ttnn, mesh, ckpt, profile, here.name, wanted,
                                      expert_dispatch=args.expert_dispatch)
            for c in rec.calls[first:]:
                if not c.accepted and not c.expected:
                    print(c.line(), flush=True)
            row["capacity_calls"] = sum(c.accepted for c in rec.calls[first:])
            print(cap.line(), flush=True)
            row["capacity"] = {**asdict(cap), "ok": cap.ok}
            rows.append(row)
            gc.collect()
    return rows


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.device_worker:
        return device_worker(args)
    print("Real ttnn 0.81.1 on mock devices: every op call goes through the real validation and allocator; values "
          "are not computed (reads return zeros). Tracing is off: trace capture segfaults on a mock device, and a "
          "trace replays the very calls checked here.", flush=True)
    calls: list[Call] = []
    failed = []
    matrix: list[dict] = []
    for i, device in enumerate(_split(args.devices, list(ONE_CHIP_DEVICES))):
        if i and args.corpus:
            argv = [a for a in argv if a != "--corpus"]  # one device records the corpus
        # The models' converted weights (random, and read back as zeros) go to a folder removed with the run, never
        # the user's ~/.cache/tt_vllm_adapter: their cache keys follow the tiny checkpoints' mtimes, new every run.
        with tempfile.NamedTemporaryFile(suffix=".json") as out, \
                tempfile.TemporaryDirectory(prefix="tt_checks_cache_") as cache:
            cmd = [sys.executable, "-m", "tt_checks", *argv, "--device-worker", device, "--out", out.name]
            env = {**os.environ, "TT_METAL_MOCK_CLUSTER_DESC_PATH": str(CLUSTERS / f"{device}.yaml"),
                   "TT_VLLM_CACHE": cache}
            rc = subprocess.run(cmd, env=env).returncode
            data = json.loads(Path(out.name).read_text() or "{}") if rc == 0 else None
        if data is None:
            failed.append(f"{device}: checker process exited with {rc}")
            continue
        calls += [Call(c["op"], c["where"], c["scenario"], Rule(**c["rule"]) if c["rule"] else None,
                       c["expected"]) for c in data["calls"]]
        failed += [f"{device}: capacity case {c['case']} did not show what it expects (see above)"
                   for c in data["capacity"] if not c["ok"]]
        matrix += data["matrix"]
        failed += [f"{r['target']}: {r['checkpoint']}/{r['profile']}: "
                   + ("a phase did not run" if any(v != "ok" for v in r.get("phases", {}).values())
                      else "capacity row not as planned") for r in data["matrix"]
                   if not r["capacity"]["ok"] or any(v != "ok" for v in r.get("phases", {}).values())]
        for o in data["outcomes"]:
            p = o["peak"]
            if p["dram_bank_size"]:
                print(f"{o['scenario']}: peak DRAM {p['dram_per_bank'] * p['dram_banks'] / 2**20:.1f} MiB "
                      f"({100 * p['dram_per_bank'] / p['dram_bank_size']:.1f}% of each of {p['dram_banks']} banks), "
                      f"peak L1 {p['l1_per_bank'] / 2**10:.1f} KiB per core "
                      f"({100 * p['l1_per_bank'] / p['l1_bank_size']:.1f}% of {p['l1_bank_size'] // 1024} KiB)")
    print(summary(calls))
    if args.report:
        Path(args.report).write_text(json.dumps({"ttnn_version": "0.81.1", "rows": matrix}, indent=1) + "\n")
        print(f"checkpoint matrix: {len(matrix)} rows -> {args.report}")
    for f in failed:
        print("FAILED " + f)
    return 0 if not failed and all(c.accepted or c.expected for c in calls) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
