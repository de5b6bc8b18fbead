"""Reads an HF checkpoint directory's safetensors, single-file or sharded, as HF's model holds them."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

# MXFP4 checkpoints (the released GPT-OSS ones) store a tensor X as X_blocks (two 4-bit e2m1 codes per byte) and
# X_scales (one power-of-two exponent per 32 values).
MXFP4_PARTS = ("_blocks", "_scales")


def dequantize_mxfp4(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`state` with every MXFP4 pair (X_blocks, X_scales) replaced by X in bf16, by transformers' own conversion
    (what `from_pretrained(..., quantization_config=Mxfp4Config(dequantize=True))` loads): exact, since every MXFP4
    value (a 4-bit code times a power of two) is a bf16 number."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    out = {}
    for name, t in state.items():
        if name.endswith(MXFP4_PARTS[1]) and name[:-len(MXFP4_PARTS[1])] + MXFP4_PARTS[0] in state:
            continue
        if name.endswith(MXFP4_PARTS[0]):
            base = name[:-len(MXFP4_PARTS[0])]
            scales = state.get(base + MXFP4_PARTS[1])
            if scales is None:
                raise ValueError(f"MXFP4 tensor {name} has no {base + MXFP4_PARTS[1]}")
            out[base] = convert_moe_packed_tensors(t, scales, dtype=torch.bfloat16)
            continue
        out[name] = t
    return out


def load_state_dict(model_dir: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of `model_dir`, under their HF names: the shards listed by model.safetensors.index.json, else
    model.safetensors, else every *.safetensors file. MXFP4 tensors come dequantized to bf16 (a tensor's blocks
    and scales may be in different shards)."""
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
    return dequantize_mxfp4(state)
