"""Each family's tiny random model, loaded through the real loading code, against the same HF model: last-token
prefill logits, then 32 greedy decode steps with the KV blocks scattered at random over the cache.

Reference profile (simulator only: fp32 activations and KV cache): PCC >= 0.999 and identical greedy tokens
(near-ties excused, see tiny.py). Accuracy profile (bf16 activations and KV cache, what a device runs): PCC >= 0.99.
Performance profile (bfloat8_b / bfloat4_b weights, bfloat8_b cache): PCC >= 0.99.
bf16 profile (bf16 weights, activations and cache, the benchmark's same-dtype comparison with HF): PCC >= 0.99."""

import pytest
import torch

from generator_vllm import TT_CLASSES
from tests.conftest import pcc
from tests.models.tiny import FAMILIES, check_greedy_step, hf_config, hf_last_logits, load_hf, make_tiny_model

BATCH, BLOCK, NUM_BLOCKS, MAX_SEQ, STEPS = 4, 32, 96, 256, 32
PCC_MIN = {"reference": 0.999, "accuracy": 0.99, "performance": 0.99, "bf16": 0.99}


def build(path, mesh_device, profile):
    cfg = hf_config(path)
    cls = TT_CLASSES[cfg.architectures[0]]
    model = cls.initialize_vllm_model(cfg, mesh_device, max_batch_size=BATCH, max_seq_len=MAX_SEQ,
                                      optimizations=profile)
    a = model.model.args
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    return model, kv


def follow_hf(tt, kv, hf, profile: str, where: str):
    """Prefill a 45-token prompt into KV blocks scattered over the cache, then 32 traced decode steps in batch slot
    2 (not the first row: the slot must not matter). Yields (step name, TT logits, HF logits, ids) for the prefill
    and each step; the next token is HF's greedy pick, checked against TT's in `reference` (near-ties excused)."""
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 512, (45,), generator=g).tolist()
    width = MAX_SEQ // BLOCK
    blocks = (torch.randperm(NUM_BLOCKS - 1, generator=g)[:width] + 1).to(torch.int32)
    slot = 2

    logits = tt.prefill_forward(torch.tensor([prompt], dtype=torch.int32), blocks[None], kv, [len(prompt)])
    ref = hf_last_logits(hf, prompt)
    assert logits.shape == (1, 1, 512) and logits.dtype == torch.float32
    yield f"{where} prefill", logits[0, 0], ref, prompt
    ids = list(prompt)
    nxt = check_greedy_step(logits[0, 0], ref, f"{where} prefill") if profile == "reference" else int(ref.argmax())

    page_table = torch.zeros(BATCH, width, dtype=torch.int32)
    page_table[slot] = blocks
    for step in range(STEPS):
        ids.append(nxt)
        tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
        tokens[slot] = nxt
        pos = torch.full((BATCH,), -1, dtype=torch.int32)
        pos[slot] = len(ids) - 1
        out = tt.decode_forward(tokens, pos, page_table, kv, enable_trace=True)
        assert out.shape == (BATCH, 1, 512)
        ref = hf_last_logits(hf, ids)
        yield f"{where} decode step {step}", out[slot, 0], ref, ids
        if profile == "reference":
            nxt = check_greedy_step(out[slot, 0], ref, f"{where} decode step {step}")
        else:
            nxt = int(ref.argmax())  # follow the reference so every step compares the same history


@pytest.mark.parametrize("profile", ["reference", "accuracy", "performance", "bf16"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_prefill_and_decode_match_hf(family, profile, mesh_device, tiny_root):
    path = make_tiny_model(family, tiny_root)
    hf = load_hf(path)
    tt, kv = build(path, mesh_device, profile)
    for where, logits, ref, _ in follow_hf(tt, kv, hf, profile, family):
        assert pcc(logits, ref) >= PCC_MIN[profile], where
    assert tt.trace_captures == 1
