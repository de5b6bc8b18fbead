"""Device capacity: dummy (shape-only) weights take exactly what real weights take, and the KV capacity computed
from the allocator is what the allocator then accepts."""

import functools
import json
from pathlib import Path

import pytest
from transformers import AutoConfig

from generator_vllm import TT_CLASSES
from tests.models.tiny import FAMILIES, make_tiny_model
from tt_models.backend import ttnn
from tt_models.capacity import kv_bank_bytes
from tt_models.checkpoint import default_model_dir
from tt_models.config import load_device_profile
from tt_models.config.checkpoints import find_checkpoint


def _dram(dev):
    v = ttnn.get_memory_view(dev, ttnn.BufferType.DRAM)
    return v.total_bytes_allocated_per_bank, v.largest_contiguous_bytes_free_per_bank


def _build(family, root, dev, load_format):
    path = make_tiny_model(family, root)
    cfg = AutoConfig.from_pretrained(path)
    return TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(
        cfg, dev, max_batch_size=32, max_seq_len=256, optimizations="performance", model_path=path,
        load_format=load_format)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_dummy_weights_are_placed_like_the_checkpoint(family, tiny_root):
    used = {}
    for fmt in ("auto", "dummy"):
        dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
        try:
            before = _dram(dev)[0]
            m = _build(family, tiny_root, dev, fmt)
            used[fmt] = _dram(dev)[0] - before
            assert used[fmt] > 0
            del m
        finally:
            ttnn.close_mesh_device(dev)
    assert used["dummy"] == used["auto"]


def test_kv_capacity_is_what_the_allocator_accepts(tiny_root, mesh_device):
    m = _build("llama_gqa", tiny_root, mesh_device, "auto")
    a, block = m.model.args, 64
    cap = m.kv_cache_capacity(block)
    dtype = m.model.kv_cache_dtype()
    assert cap.blocks > 1000 and cap.reserve_per_bank > 0
    shape = (cap.blocks, a.n_kv_heads, block, a.head_dim)
    cache = [ttnn.empty(shape, dtype, ttnn.TILE_LAYOUT, mesh_device, ttnn.DRAM_MEMORY_CONFIG)
             for _ in range(2 * a.n_layers)]
    used, free = _dram(mesh_device)
    # What the cache took per bank is the formula's; the activation reserve is left, and one block more would have
    # eaten into it (the capacity is the largest that leaves it).
    def kv_bytes(blocks):
        return kv_bank_bytes(blocks, a.n_layers, a.n_kv_heads, block, a.head_dim, dtype.name, cap.banks)

    assert cap.free_per_bank - free == kv_bytes(cap.blocks)
    assert free >= cap.reserve_per_bank
    assert kv_bytes(cap.blocks + 1) > cap.free_per_bank - cap.reserve_per_bank
    # One more tensor of that size does not fit at all.
    with pytest.raises(Exception, match="Out of Memory"):
        cache.append(ttnn.empty((cap.blocks * 40, a.n_kv_heads, block, a.head_dim), dtype, ttnn.TILE_LAYOUT,
                                mesh_device, ttnn.DRAM_MEMORY_CONFIG))
    del cache


def test_generation_refuses_more_than_32_users(tiny_root, mesh_device):
    path = make_tiny_model("llama_gqa", tiny_root)
    cfg = AutoConfig.from_pretrained(path)
    with pytest.raises(Exception, match=r"max_batch_size 33: one device decodes at most 32 users.*data parallel"):
        TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh_device, max_batch_size=33,
                                                               max_seq_len=256, model_path=path)


REAL = json.loads((Path(__file__).parents[1] / "fixtures" / "capacity_N150_0.81.1.json").read_text())


@pytest.mark.parametrize("case", REAL["cases"], ids=lambda c: c["case"])
def test_capacity_matches_the_real_allocator(case):
    """The real ttnn 0.81.1 on a mock N150 (scripts/check_real_ttnn.sh --corpus) placed these weights and reported
    this KV capacity; the simulated N150 must place the same bytes per bank and find the same capacity, and refuse
    at load with the device's message where the real one did."""
    path = Path(__file__).parents[2] / case["path"] if case["path"] else default_model_dir()
    cfg = AutoConfig.from_pretrained(path)
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=load_device_profile("N150").trace_region_size)
    try:
        assert ttnn.get_memory_view(dev, ttnn.BufferType.TRACE).total_bytes_per_bank == case["trace_region_per_bank"]
        before, _ = _dram(dev)
        build = functools.partial(TT_CLASSES[cfg.architectures[0]].initialize_vllm_model, cfg, dev,
                                  max_batch_size=case["batch"], max_seq_len=case["context"],
                                  optimizations=case["profile"], model_path=path, load_format=case["load_format"])
        if not case["loaded"]:
            with pytest.raises(Exception) as err:
                build()
            assert case["oom_at_load"] in str(err.value)
            return
        m = build()
        draft = None
        if case.get("draft"):  # a speculative-decoding draft beside the target, its cache taking each block id
            target_bytes = _dram(dev)[0]
            dcfg = find_checkpoint(case["draft"]).hf_config()
            draft = TT_CLASSES[dcfg.architectures[0]].initialize_vllm_model(
                dcfg, dev, max_batch_size=case["batch"], max_seq_len=case["context"], optimizations=case["profile"],
                load_format="dummy")
            assert _dram(dev)[0] - target_bytes == case["draft_weights_per_bank"]
        assert _dram(dev)[0] - before == case["weights_per_bank"]
        cap = (m.kv_cache_capacity(case["block_size"]) if draft is None else
               m.kv_cache_capacity(case["block_size"], draft=draft))
        assert cap.blocks == case["capacity_blocks"]
        del m, draft
    finally:
        ttnn.close_mesh_device(dev)


def test_the_draft_cache_takes_its_share_of_the_dram():
    """kv_capacity with a draft's cache beside the target's: a block costs both, so fewer blocks fit, in the ratio
    of their per-block bytes (up to the per-bank rounding)."""
    from types import SimpleNamespace

    from tt_models.capacity import kv_capacity

    device = ttnn.open_mesh_device(ttnn.MeshShape(1, 1))
    try:
        target = SimpleNamespace(n_layers=30, n_kv_heads=3, head_dim=64, dim=576, n_heads=9, hidden_dim=1536,
                                 vocab_size=49152, kv_caches_per_layer=2)
        draft = SimpleNamespace(n_layers=2, n_kv_heads=3, head_dim=64, dim=576, n_heads=9, hidden_dim=1536,
                                vocab_size=49152, kv_caches_per_layer=2)
        alone = kv_capacity(device, target, 64, ttnn.bfloat8_b, 2048)
        both = kv_capacity(device, target, 64, ttnn.bfloat8_b, 2048, also=[(draft, ttnn.bfloat8_b)])
    finally:
        ttnn.close_mesh_device(device)
    assert both.bytes_per_block_per_bank == pytest.approx(alone.bytes_per_block_per_bank * 32 / 30)
    assert both.blocks == pytest.approx(alone.blocks * 30 / 32, abs=2)
