"""Decode program configs are derived from the shapes for any width (tt_models/layouts.py), by rules the device's
DRAM-sharded matmul accepts (measured on the real ttnn 0.81.1, tt_checks/cases_widths.py): every input splits its K
tiles evenly over its cores, in0_block_w divides the per-core width, the gate/up product lands on the cores w2 reads
it from, every output fits the grid, and the circular buffers fit L1. Checked over widths real checkpoints have and
random ones, on Wormhole and Blackhole grids; then run on the simulator, which refuses what the device refuses."""

import random
from types import SimpleNamespace

import pytest
import torch

from tt_models.backend import ttnn
from tt_models.config import load_optimizations
from tt_models.layouts import build_layouts, core_count, dram_matmul_cb_bytes
from tt_models.precision import layer_precision

# (hidden, MLP, heads, KV heads, head_dim, vocab) of real checkpoints, and odd widths no checkpoint has (yet).
REAL = [(896, 4864, 14, 2, 64, 151936), (960, 2560, 15, 5, 64, 49152), (1536, 8960, 12, 2, 128, 151936),
        (3584, 18944, 28, 4, 128, 152064), (5120, 27648, 40, 8, 128, 152064), (2560, 9728, 32, 8, 128, 151936),
        (576, 1536, 9, 3, 64, 49152), (4096, 11008, 32, 32, 128, 32000), (5120, 32768, 32, 8, 128, 131072)]
rng = random.Random(18)
ODD = [(32 * rng.randint(1, 200), 32 * rng.randint(1, 1000), h, h, 32 * rng.choice((1, 2, 4)),
        rng.randint(1000, 200000)) for h in (rng.randint(1, 32) for _ in range(30))]


def args(dim, hidden, heads, kv, hd, vocab):
    return SimpleNamespace(dim=dim, hidden_dim=hidden, n_heads=heads, n_kv_heads=kv, head_dim=hd, vocab_size=vocab)


@pytest.mark.parametrize("chip", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("profile", ["performance", "performance_bfp4", "accuracy", "bf16"])
def test_decode_configs_hold_for_every_width(chip, profile, monkeypatch):
    monkeypatch.setenv("TT_SIM_CHIP", chip)
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    try:
        prof = load_optimizations(profile)
        precisions = [layer_precision(prof, 0)]
        grid = dev.compute_with_storage_grid_size()
        cores = grid.x * grid.y
        for shape in REAL + ODD:
            lay = build_layouts(args(*shape), dev, 32, precisions=precisions, head_dtype=ttnn.bfloat8_b)
            d = lay.decode
            for name, mm in (("qkv", d.qkv), ("wo", d.wo), ("w1_w3", d.w1_w3), ("w2", d.w2), *(
                    (f"lm_head{i}", m) for i, m in enumerate(d.lm_head))):
                pc = mm.program
                where = f"{shape} {name}"
                assert mm.k_tiles == mm.cores * mm.per_core_k, where  # the input splits K evenly
                assert mm.per_core_k % pc.in0_block_w == 0, where  # and in0_block_w divides its width
                assert mm.out_cores * pc.per_core_N >= mm.n_tiles and mm.out_cores <= cores, where
                assert mm.cb_bytes <= lay.cb_budget, where
            # The gate*up product is w2's input as it lands.
            assert d.w1_w3.out_cores == d.w2.cores and d.w1_w3.program.per_core_N == d.w2.per_core_k, shape
            assert d.w1_w3.n_tiles % d.w1_w3.out_cores == 0, shape
            assert d.wo.cores == shape[2]  # concatenated heads arrive one head per core
    finally:
        ttnn.close_mesh_device(dev)


def test_core_count_is_the_divisor_nearest_32():
    assert [core_count(t, 64) for t in (152, 80, 280, 592, 28, 7, 67, 924)] == [38, 40, 35, 37, 28, 7, 1, 33]


def test_narrow_blocks_where_the_weight_stream_is_wide():
    """in0_block_w falls to keep the weight stream (3 x in0_block_w x the strip per bank) in L1: K 160 tiles on 32
    cores (5 per core) with a 72-tile strip fits only with in0_block_w 1 (the real ttnn refuses 5: see the corpus case
    matmul/dram-sharded/k160-n864-bfp8-bw5)."""
    from tt_models.layouts import MatmulDtypes, dram_matmul

    bfp8_weight = MatmulDtypes(in1=1088, interm=2048)  # the corpus case's default kernel: bf16 accumulation
    mm = dram_matmul(160 * 32, 864 * 32, 32, 12, dtypes=bfp8_weight, cb_budget=int(0.85 * 1_393_312))
    assert mm.program.in0_block_w == 1 and mm.weight_shard_tiles == 72
    assert dram_matmul_cb_bytes(5, 72, bfp8_weight) + 105_824 == 1_448_800  # where the real program's buffers end


@pytest.mark.parametrize("shape", [(896, 4864, 14, 2, 64), (960, 2560, 15, 5, 64), (1536, 8960, 12, 2, 128),
                                   (128, 224, 4, 1, 32)])
def test_decode_runs_at_odd_widths(shape, mesh_device):
    """One decoder layer's decode at these widths goes through every op the simulator checks (placed weights)."""
    from transformers import Qwen2Config

    from generator_vllm import TT_CLASSES

    dim, hidden, heads, kv, hd = shape
    cfg = Qwen2Config(hidden_size=dim, intermediate_size=hidden, num_attention_heads=heads, num_key_value_heads=kv,
                      head_dim=hd, num_hidden_layers=1, vocab_size=1024)
    cfg.architectures = ["Qwen2ForCausalLM"]
    m = TT_CLASSES["Qwen2ForCausalLM"].initialize_vllm_model(cfg, mesh_device, max_batch_size=32, max_seq_len=256,
                                                             load_format="dummy")
    kv_cache = m.allocate_kv_cache((16, kv, 64, hd), torch.bfloat16, 1)
    m.warmup_model_decode(kv_cache, True, 32, 4)
