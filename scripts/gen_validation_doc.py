"""Writes docs/ttnn-validation.md from the simulator's rule registry (ttnn_sim/rules.py)."""

from pathlib import Path

from ttnn_sim.rules import markdown

out = Path(__file__).resolve().parents[1] / "docs" / "ttnn-validation.md"
out.write_text(markdown())
print(f"wrote {out}")
