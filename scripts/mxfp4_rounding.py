"""What the hardware profiles' block-float rounding does to MXFP4 experts (GPT-OSS's released checkpoints): the
experts are read dequantized (exact in bf16) and placed as bfloat8_b (`performance`) or bfloat4_b
(`performance_bfp4`) tiles like bf16 weights. An MXFP4 scale is shared by 32 values along a weight's input dim; a
block-float exponent by 16 values along its output dim (a row of a tile face of the placed [in, out] weight), so one
block mixes 16 MXFP4 scales and its smaller members lose bits.

Measured at gpt-oss-20b's expert widths (hidden 2880, intermediate 2880: gate_up [2880 -> 5760], down [2880 -> 2880])
on random MXFP4 codes, the scales of a block's 16 rows drawn from `spread` consecutive exponents (1: one scale for
all, the best case); beside it, the same rounding of Gaussian weights of the same RMS (what a bf16 checkpoint's
experts lose). Prints a table and writes JSON:

    .venv/bin/python scripts/mxfp4_rounding.py --report benchmarks/data/mxfp4_rounding.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = {"gate_up_proj": (2880, 5760), "down_proj": (2880, 2880)}  # (in, out) per expert
SPREADS = (1, 2, 4, 8)


def mxfp4_weight(n_in: int, n_out: int, spread: int, g: torch.Generator) -> torch.Tensor:
    """One expert's [in, out] weight (x @ W) from random MXFP4 blocks/scales, dequantized by transformers."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    blocks = torch.randint(0, 256, (1, n_out, n_in // 32, 16), generator=g, dtype=torch.uint8)
    scales = torch.randint(122 - spread + 1, 123, (1, n_out, n_in // 32), generator=g, dtype=torch.uint8)
    return convert_moe_packed_tensors(blocks, scales, dtype=torch.bfloat16)[0].float()  # [in, out]


def rel_error(w: torch.Tensor, dtype) -> float:
    from ttnn_sim.blockfloat import quantize_block_float

    return float((quantize_block_float(w, dtype) - w).norm() / w.norm())


def main(argv: list[str]) -> int:
    from ttnn_sim.types import DataType

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--report", help="JSON report path")
    a = p.parse_args(argv)
    g = torch.Generator().manual_seed(0)
    rows = []
    for name, (n_in, n_out) in SHAPES.items():
        for spread in SPREADS:
            w = mxfp4_weight(n_in, n_out, spread, g)
            gauss = torch.randn(w.shape, generator=g) * w.pow(2).mean().sqrt()
            gauss = gauss.bfloat16().float()
            row = {"tensor": name, "in": n_in, "out": n_out, "scale_spread": spread}
            for dt in (DataType.BFLOAT8_B, DataType.BFLOAT4_B):
                key = dt.name.lower()
                row[f"mxfp4_{key}_rel_error"] = rel_error(w, dt)
                row[f"gaussian_{key}_rel_error"] = rel_error(gauss, dt)
            rows.append(row)
            print(f"{name} spread {spread}: bfloat8_b {row['mxfp4_bfloat8_b_rel_error']:.2e} "
                  f"(Gaussian {row['gaussian_bfloat8_b_rel_error']:.2e}), bfloat4_b "
                  f"{row['mxfp4_bfloat4_b_rel_error']:.3f} (Gaussian {row['gaussian_bfloat4_b_rel_error']:.3f})",
                  flush=True)
    if a.report:
        Path(a.report).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
