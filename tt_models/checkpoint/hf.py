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
    value (a 4-bit code times a power of two) is a bf16 number. In place: each pair is dropped as its bf16 tensor is
    made, so the packed tensors are freed as the conversion goes rather than held beside all the bf16 ones."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    blocks, scales = MXFP4_PARTS
    for name in [n for n in state if n.endswith(blocks)]:
        base = name[: -len(blocks)]
        if base + scales not in state:
            raise ValueError(f"MXFP4 tensor {name} has no {base + scales}")
        packed, exponents = state.pop(name), state.pop(base + scales)
        state[base] = convert_moe_packed_tensors(packed, exponents, dtype=torch.bfloat16)
        del packed, exponents
    return state


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
