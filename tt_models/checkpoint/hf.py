"""Reads an HF checkpoint directory's safetensors, single-file or sharded."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file


def load_state_dict(model_dir: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of `model_dir`, under their HF names: the shards listed by model.safetensors.index.json, else
    model.safetensors, else every *.safetensors file."""
    model_dir = Path(model_dir)
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (model_dir / "model.safetensors").exists():
        files = ["model.safetensors"]
    else:
        files = sorted(p.name for p in model_dir.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no safetensors weights in {model_dir}")
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update(load_file(model_dir / f))
    return state
