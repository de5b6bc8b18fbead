"""all_gather's composite path against L1 on a mock T3K (1x8 line): a TILE input whose gathered last dim is not whole
tiles (Gemma 3's 262,208-token vocabulary is 32,776 columns on each of 8 chips) is broadcast, untilized, concatenated
as rows and tilized again in the input's buffer type, and the row-major concat's circular buffers hold whole gathered
rows; beside the staged copies in L1 they reach the lowest L1 buffer and the device refuses the call. Each case
gathers [1, 1, 32, width] bf16 replicated on the 8 chips with `blocker` bytes per bank of other L1 interleaved
buffers allocated first (the L1 a model keeps beside it).

    ./scripts/check_real_ttnn.sh --python -m tt_checks.composite_gather    # records the real verdicts
    -> tests/fixtures/composite_gather_T3K_0.81.1.json, replayed on the simulator by tests/sim/test_ccl.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "composite_gather_T3K_0.81.1.json"
# name: (width per chip, input buffer, memory_config buffer (None: the input's), blocker bytes per bank)
CASES = {
    "l1-32776-empty": (32776, "L1", None, 0),
    "l1-32776-beside-1mb": (32776, "L1", None, 999_424),
    "l1-32800-beside-1mb": (32800, "L1", None, 999_424),  # whole tiles: the native all_gather
    "l1-4104-empty": (4104, "L1", None, 0),
    "l1-4104-beside-1mb": (4104, "L1", None, 999_424),
    "l1-1000-beside-1mb": (1000, "L1", None, 999_424),
    "l1-to-dram-32776-beside-1mb": (32776, "L1", "DRAM", 999_424),
    "dram-32776-beside-1mb": (32776, "DRAM", None, 999_424),
    "dram-32776-empty": (32776, "DRAM", None, 0),
}


def run_case(ttnn: Any, mesh: Any, width: int, src: str, dst: str | None, blocker: int) -> dict:
    import torch

    mc = {"L1": ttnn.L1_MEMORY_CONFIG, "DRAM": ttnn.DRAM_MEMORY_CONFIG}
    x = ttnn.from_torch(torch.zeros(1, 1, 32, width), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh,
                        memory_config=mc[src], mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
    banks = ttnn.get_memory_view(mesh, ttnn.BufferType.L1).num_banks
    block = (ttnn.empty([1, 1, 32, blocker // 2048 * banks * 32], ttnn.bfloat16, ttnn.TILE_LAYOUT, mesh,
                        ttnn.L1_MEMORY_CONFIG) if blocker else None)
    try:
        out = ttnn.all_gather(x, 3, cluster_axis=1, memory_config=mc[dst] if dst else None,
                              topology=ttnn.Topology.Linear)
        verdict = {"ok": True, "shape": list(out.shape)}
        ttnn.deallocate(out)
    except Exception as e:  # the real ttnn's TT_FATAL / TT_THROW, the simulator's TTError
        from tt_checks.report import parse_error

        verdict = {"ok": False, "error": parse_error(str(e)).message}
    for t in (block, x):
        if t is not None:
            ttnn.deallocate(t)
    return verdict


def run_all(ttnn: Any, mesh: Any) -> dict[str, dict]:
    return {name: run_case(ttnn, mesh, *case) for name, case in CASES.items()}


def main() -> int:
    os.environ["TT_METAL_MOCK_CLUSTER_DESC_PATH"] = str(ROOT / "tt_checks" / "mock_device" / "clusters" / "T3K.yaml")
    import ttnn

    ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 8), trace_region_size=0)
    verdicts = run_all(ttnn, mesh)
    ttnn.close_mesh_device(mesh)
    FIXTURE.write_text(json.dumps({"ttnn_version": "0.81.1", "device": "T3K 1x8", "cases": verdicts}, indent=1) + "\n")
    for name, v in verdicts.items():
        print(f"{name}: {'ok' if v['ok'] else 'REJECTS ' + v['error'][:200]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
