"""What a model becomes on a TT device, without reading its weights: `tt-describe MODEL [--device N150] ...`.

MODEL is a Hugging Face model directory (its config.json) or a checkpoint of the checkpoint matrix
(hub id, or its last part: `tt-describe Qwen2.5-7B-Instruct --device N300`). The model is built exactly as vLLM builds
it (the generation class's initialize_vllm_model, load_format "dummy": every weight placed with its real shape, dtype
and memory config, no values), on the simulator's model of the device unless a real one is present, and the tool
prints the tensor-parallel split, every decode and prefill program config with why it was chosen, the weights per chip
and the KV cache the device holds beside them, or the reason the model cannot run there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

TILE = 32
BLOCK = 64  # KV block size the capacity is reported in (vLLM's TT default)
CONTEXTS = (8192, 32768, 131072)  # context lengths KV per user is reported at
ARCH = {"P150": "blackhole"}  # device profiles on Blackhole chips; the rest are Wormhole


def _config(model: str, n_layers: int | None) -> Any:
    from transformers import AutoConfig

    from tt_models.config.checkpoints import find_checkpoint

    path = Path(model)
    if (path / "config.json").exists():
        cfg = AutoConfig.from_pretrained(path)
        if n_layers is not None:
            cfg.num_hidden_layers = n_layers
        return cfg
    return find_checkpoint(model).hf_config(n_layers=n_layers)


def open_device(device: str, mesh_shape: tuple[int, int] | None = None) -> Any:
    """The device profile's mesh: the real one when ttnn has a device, else the simulator's model of its chips."""
    from tt_models.config import load_device_profile

    profile = load_device_profile(device)
    shape = mesh_shape or profile.mesh_shape
    os.environ.setdefault("TT_SIM_CHIP", ARCH.get(profile.name, "wormhole_b0"))
    os.environ.setdefault("TT_SIM_NUM_DEVICES", str(max(8, shape[0] * shape[1])))
    from tt_models.backend import ttnn

    if shape[0] * shape[1] > 1:
        ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
    return ttnn.open_mesh_device(ttnn.MeshShape(*shape), trace_region_size=profile.trace_region_size)


def close_device(mesh: Any) -> None:
    """Closes what open_device opened (main() runs in-process from tests and other tools: the chips must be free
    again when it returns)."""
    from tt_models.backend import ttnn

    multi = mesh.get_num_devices() > 1
    ttnn.close_mesh_device(mesh)
    if multi:
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


def _dtype(t: Any) -> str:
    return getattr(t, "name", str(t)).rsplit(".", 1)[-1].lower()


def describe(cfg: Any, mesh: Any, profile: str, batch: int, max_seq_len: int) -> list[str]:
    """The lines tt-describe prints; raises the model's refusal (UnsupportedModelError, or the device's out of
    memory) when it cannot run on this mesh."""
    from generator_vllm import TT_CLASSES
    from tt_models.backend import ttnn
    from tt_models.config import load_model_overrides
    from tt_models.layouts import prefill_matmul, sdpa_prefill, tile_bytes
    from tt_models.parallel import shared_expert_units

    arch = next(a for a in cfg.architectures if a in TT_CLASSES)
    gen = TT_CLASSES[arch].initialize_vllm_model(cfg, mesh, max_batch_size=batch, max_seq_len=max_seq_len,
                                                 optimizations=profile, load_format="dummy")
    m = gen.model
    a, local, plan, lay = m.args, m.local_args, m.plan, m.layouts
    d = lay.decode
    overrides = load_model_overrides(cfg._name_or_path or "")
    runs = overrides.profile_for(profile)
    if runs != profile:  # a model file maps the profile (Llama-3, gpt-oss-120b: performance -> performance_bfp4)
        profile = f"{profile} (runs {runs}: configs/models/{overrides.source}.yaml)"
    out = [f"{cfg._name_or_path or arch}: {arch}, {a.n_layers} layers, hidden {a.dim}, {a.n_heads} heads "
           f"({a.n_kv_heads} KV) x {a.head_dim}, MLP {a.hidden_dim}, vocabulary {a.vocab_size}",
           f"device: {tuple(mesh.shape)} mesh, {lay.grid[0]}x{lay.grid[1]} cores per chip, "
           f"{mesh.dram_grid_size().x} DRAM banks; profile {profile}; batch {batch}, max_seq_len {max_seq_len}"]
    if plan.devices > 1:
        how = (f"two ways: heads over {plan.grid[0]} rows, the residual over {plan.grid[1]} columns" if plan.two_d
               else f"over {plan.devices} chips")
        out.append(f"tensor parallel {how}: per chip {plan.n_heads} heads, {plan.n_kv_heads} KV heads, MLP "
                   f"{plan.hidden_dim}, vocabulary {plan.vocab}, residual {plan.dim} columns")
    if a.n_experts:
        moe = sum(a.is_moe(i) for i in range(a.n_layers))
        experts = a.experts_padded_from or a.n_experts
        out.append(f"mixture of experts in {moe} of {a.n_layers} layers: {experts} experts of {a.moe_hidden_dim} "
                   f"units, {a.experts_per_tok} per token; {a.n_experts // plan.devices} experts per chip"
                   + (" (expert parallel; attention tensor parallel)" if plan.devices > 1 else ""))
        if a.router_scoring == "sigmoid":
            within = (f" within the best {a.expert_groups[1]} of {a.expert_groups[0]} groups" if a.expert_groups
                      else "")
            out.append(f"routing: sigmoid scores, the top {a.experts_per_tok} of score + correction bias{within}, "
                       + ("renormalized, " if a.norm_topk_prob else "") + f"times {a.routed_scaling:g}")
        if a.experts_padded_from:
            out.append(f"experts padded {experts} -> {a.n_experts} with zero experts no token selects (router "
                       f"{'score bias' if a.router_scoring == 'sigmoid' else 'logit'} -1e30): the same number on "
                       f"every chip")
        if a.shared_expert_dim:
            gate = "gated by sigmoid(x . shared_expert_gate)" if a.shared_expert_gated else "ungated"
            out.append(f"shared expert of {a.shared_expert_dim} units on every token ({gate}); "
                       f"{shared_expert_units(a, plan)} units per chip")
    if a.mla is not None:
        ml = a.mla
        query = f"low-rank {ml.q_lora_rank}" if ml.q_lora_rank else "one projection"
        out.append(f"multi-latent attention: one cached row of {ml.kv_lora_rank} + {ml.rope_dim} channels per position "
                   f"(every head's keys and values), query heads of {ml.nope_dim} + {ml.rope_dim} ({query}) with the "
                   f"key up-projection absorbed, values {ml.v_dim} wide (docs/mla.md)")
    if a.rotary_dim:
        out.append(f"RoPE on the first {a.rotary_dim} of each head's {a.head_dim} channels (the rest pass through: "
                   f"cos 1, sin 0)")
    if plan.dim_pad:
        out.append(f"residual padded {a.dim} -> {a.dim + plan.dim_pad} with zero columns: whole tiles on every chip "
                   f"(the norms average over the model's {a.dim}: sliced off a gathered row, or epsilon and gamma "
                   f"scaled where the norm is distributed)")
    if a.mlp_padded_from:
        out.append(f"MLP size padded {a.mlp_padded_from} -> {a.hidden_dim} with zero units: whole tiles on every chip")
    precisions = {(_dtype(p.wqkv), _dtype(p.wo), _dtype(p.ff1_ff3), _dtype(p.ff2), _dtype(p.kv_cache))
                  for p in m.precisions}
    for wqkv, wo, ff13, ff2, kv in sorted(precisions):
        out.append(f"weights: QKV {wqkv}, WO {wo}, w1/w3 {ff13}, w2 {ff2}; KV cache {kv}"
                   + ("" if len(precisions) == 1 else " (some layers)"))
    rx, ry = d.residual_grid
    norm = d.norm
    out += ["decode (traced, every layer the same configs):",
            f"  residual: width-sharded [{TILE}, {plan.dim}] on {rx}x{ry} cores ({rx * ry} cores dividing "
            f"{plan.dim // TILE} tiles, nearest 32)",
            f"  norms: sharded rms_norm on {norm.compute_with_storage_grid_size.x}x"
            f"{norm.compute_with_storage_grid_size.y} cores, block_w {norm.block_w}, subblock_w {norm.subblock_w}"]
    attention_mms = () if a.mla is not None else (("QKV", d.qkv), ("WO", d.wo))
    for name, mm in (*attention_mms, ("w1/w3", d.w1_w3), ("w2", d.w2)):
        out.append(f"  {name}: {mm.describe()}")
    same = 0
    for i, mm in enumerate(d.lm_head):  # equal splits print once
        if i + 1 < len(d.lm_head) and lay.lm_head_splits[i + 1] == lay.lm_head_splits[i]:
            same += 1
            continue
        count = f"{same + 1} splits" if same else "1 split"
        out.append(f"  LM head, {count} of {lay.lm_head_splits[i]} columns: {mm.describe()}")
        same = 0
    if a.mla is not None:
        out.append(f"  attention: its projections and each head's W_k / W_v as matmuls on interleaved L1 (ttnn's "
                   f"default configs); each user's latent row written on its own core; paged MLA decode on the "
                   f"{lay.grid[0]}x{lay.grid[1]} grid")
    else:
        out.append(f"  heads: one user per core, Q and V on {d.q_cores.num_cores()} cores, K on "
                   f"{d.k_cores.num_cores()}; paged SDPA decode on the {lay.grid[0]}x{lay.grid[1]} grid"
                   + (f", sliding window {a.sliding_window}" if a.sliding_window else ""))
    p0 = m.precisions[0]
    act, res = tile_bytes(p0.residual), tile_bytes(p0.residual)
    qkv_n = a.head_dim * (local.n_heads + 2 * local.n_kv_heads)
    out.append("prefill (2-D multicast matmuls on interleaved DRAM; chunks of up to "
               f"{gen.max_prefill_chunk} tokens):")
    seq = 128
    while True:
        seq = min(seq, gen.max_prefill_chunk)
        parts = []
        attention = () if a.mla is not None else (
            ("QKV", local.dim, qkv_n, p0.wqkv, "LI_QKV_PREFILL"),
            ("WO", local.n_heads * a.head_dim, local.dim, p0.wo, "LI_O_PREFILL"))
        for name, k, n, w, kernel in (*attention, ("w1/w3", local.dim, local.hidden_dim, p0.ff1_ff3, "LI_FF1_FF3"),
                                      ("w2", local.hidden_dim, local.dim, p0.ff2, "LI_FF2")):
            pm = prefill_matmul(seq, k, n, lay.grid, act, tile_bytes(w), res,
                                bool(p0.kernels[kernel].fp32_dest_acc_en), lay.cb_budget)
            pc = pm.program
            parts.append(f"{name} grid {pc.compute_with_storage_grid_size.x}x{pc.compute_with_storage_grid_size.y} "
                         f"in0_block_w {pc.in0_block_w} per_core {pc.per_core_M}x{pc.per_core_N}"
                         + (f" in batches of {pm.rows} rows" if pm.rows < seq else ""))
        sd = sdpa_prefill(seq, 0, lay.grid, a.head_dim)
        out.append(f"  {seq} tokens: " + "; ".join(parts) + f"; SDPA chunks {sd.q_chunk_size}/{sd.k_chunk_size}")
        if seq >= min(max_seq_len, gen.max_prefill_chunk):
            break
        seq *= 4
    dram = ttnn.get_memory_view(mesh, ttnn.BufferType.DRAM)
    cap = gen.kv_cache_capacity(BLOCK)
    gib = 1 << 30
    weights = dram.total_bytes_allocated_per_bank * dram.num_banks
    per_user = cap.tokens(BLOCK) // batch
    total = dram.total_bytes_per_bank * dram.num_banks
    out += [f"memory per chip: weights {weights / gib:.2f} GiB of {total / gib:.2f} GiB DRAM; KV cache room: "
            f"{cap.blocks} blocks of {BLOCK} tokens ({cap.tokens(BLOCK)} tokens), {per_user} tokens per user at "
            f"batch {batch}"
            + ("" if per_user >= max_seq_len else f" (less than max_seq_len {max_seq_len})")]
    longest = getattr(cfg, "max_position_embeddings", None) or max(CONTEXTS)
    out += kv_per_user(cap, [a.window(i) for i in range(a.n_layers)], [c for c in CONTEXTS if c <= longest])
    gen.release()
    return out


def kv_per_user(cap: Any, windows: list[int | None], contexts: tuple[int, ...] | list[int] = CONTEXTS) -> list[str]:
    """KV cache one user holds per chip at each context length (up to the model's longest), and how many such users
    the room beside the weights holds: every layer keeping the whole context, and with vLLM's hybrid KV cache
    (sliding-window layers keeping their window) when the model has sliding-window layers. Decode runs at most 32
    users per replica."""
    from vllm_patches.kv_blocks import blocks_per_request
    from vllm_patches.kv_specs import hybrid_groups

    per_layer = cap.bytes_per_block_per_bank / len(windows)  # one layer's K and V of one block, per DRAM bank
    room = cap.free_per_bank - cap.reserve_per_bank
    ways = [("whole context", False)] + ([("hybrid KV cache", True)] if any(w is not None for w in windows) else [])
    out = [f"KV per user (blocks of {BLOCK} tokens, per chip) and users the room holds at that context:"]
    for name, hybrid in ways:
        groups = hybrid_groups(windows, BLOCK, hybrid)
        span = max(n for _, n in groups)  # a block spans one layer of every group
        cells = []
        for ctx in contexts:
            bank = blocks_per_request(groups, ctx, BLOCK) * span * per_layer
            cells.append(f"{ctx // 1024}k {bank * cap.banks / (1 << 20):,.0f} MiB, {int(room // bank)} users")
        out.append(f"  {name}: " + "; ".join(cells)
                   + (f" ({len(groups)} groups of up to {span} layers)" if hybrid else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tt-describe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="HF model directory, or a checkpoint of the checkpoint matrix")
    p.add_argument("--device", default="N150", help="device profile: N150, N300, T3K, TG, P150")
    p.add_argument("--mesh-shape", help="open the device's chips as RxC (e.g. 2x4 for a T3K split two ways)")
    p.add_argument("--profile", default="performance", help="optimization profile (tt_models/configs/optimizations)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--max-seq-len", type=int, default=4096)
    p.add_argument("--layers", type=int, help="build only this many layers (default: all)")
    args = p.parse_args(argv)
    from tt_models.model_args import UnsupportedModelError

    cfg = _config(args.model, args.layers)
    shape = tuple(int(n) for n in args.mesh_shape.lower().split("x")) if args.mesh_shape else None
    mesh = open_device(args.device, shape)
    try:
        lines = describe(cfg, mesh, args.profile, args.batch, args.max_seq_len)
    except (UnsupportedModelError, ValueError) as e:
        print(f"{cfg._name_or_path}: cannot run on {args.device}: {e}")
        return 1
    except Exception as e:  # the device's own refusal (e.g. out of memory while placing the weights)
        if type(e).__name__ != "TTError" and "Out of Memory" not in str(e):
            raise
        print(f"{cfg._name_or_path}: cannot run on {args.device}: {e}")
        return 1
    finally:
        close_device(mesh)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
