"""Writes docs/ttnn-validation.md from the simulator's rule registry (tt_models/sim/ttnn/rules.py)."""

from pathlib import Path

from tt_models.sim.ttnn.rules import markdown

out = Path(__file__).resolve().parents[1] / "docs" / "ttnn-validation.md"
out.write_text(markdown())
print(f"wrote {out}")
