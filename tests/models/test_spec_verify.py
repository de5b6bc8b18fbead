"""Speculative decoding's verify step on the generation class: k + 1 rows per user in one traced decode compute
exactly what k + 1 decode steps compute (bit for bit, logits and the cache left behind), and writing a user's rows in
one cache-update call (two cores on one cache tile: a race on the device) is caught by the simulator."""

import pytest
import torch

from generator_vllm import TT_CLASSES
from tests.models.tiny import FAMILIES, MOE_FAMILIES, hf_config, make_tiny_model

ROWS, BLOCK, NUM_BLOCKS, MAX_SEQ = 16, 32, 96, 256
K = 3  # draft tokens per user: K + 1 rows each
PROMPTS = (37, 64, 90)  # the second ends on a block boundary, so its drafts start a new block


def build(family, root, mesh_device, profile):
    path = make_tiny_model(family, root)
    cfg = hf_config(path)
    cls = TT_CLASSES[cfg.architectures[0]]
    model = cls.initialize_vllm_model(cfg, mesh_device, ROWS, MAX_SEQ, optimizations=profile)
    a = model.model.args
    shape = (NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim)
    caches = [model.allocate_kv_cache(shape, torch.bfloat16, a.n_layers) for _ in range(2)]
    return model, caches


def tables(model, users):
    width = MAX_SEQ // BLOCK
    t = torch.zeros(ROWS, width, dtype=torch.int32)
    for u in range(users):
        t[u] = torch.arange(width) + 1 + u * width
    return t


def padded(rows, values, fill):
    out = torch.full((ROWS,), fill, dtype=torch.int32)
    out[: len(values)] = torch.tensor(values, dtype=torch.int32)
    return out


# Every tiny family, the profiles taken in turn (the rows' arithmetic is the decode step's on each).
PROFILE_CYCLE = ("reference", "performance", "accuracy", "bf16", "performance_bfp4")
CASES = [(f, PROFILE_CYCLE[i % len(PROFILE_CYCLE)]) for i, f in enumerate([*FAMILIES, *MOE_FAMILIES])]


@pytest.mark.parametrize("family,profile", CASES)
def test_verify_rows_equal_decode_steps(family, profile, mesh_device, tiny_root):
    model, (seq_kv, ver_kv) = build(family, tiny_root, mesh_device, profile)
    users = len(PROMPTS)
    g = torch.Generator().manual_seed(7)
    prompts = [torch.randint(0, 512, (n,), generator=g) for n in PROMPTS]
    drafts = torch.randint(0, 512, (users, K), generator=g)
    table = tables(model, users)
    for kv in (seq_kv, ver_kv):
        tokens = torch.zeros(users, max(PROMPTS), dtype=torch.int32)
        for u, p in enumerate(prompts):
            tokens[u, : len(p)] = p
        first = model.prefill_forward(tokens, table[:users], kv, list(PROMPTS))[:, 0].argmax(-1)

    # K + 1 decode steps: the first token, then the drafts, one position further each step.
    steps = []
    for j in range(K + 1):
        tok = first if j == 0 else drafts[:, j - 1]
        out = model.decode_forward(padded(ROWS, tok.tolist(), 0).reshape(ROWS, 1),
                                   padded(ROWS, [n + j for n in PROMPTS], -1), table, seq_kv)
        steps.append(out[:users, 0])

    # One verify step: user u's rows u*(K+1) .. u*(K+1)+K, each with the user's page-table row.
    rows = [(u, j) for u in range(users) for j in range(K + 1)]
    tok = [int(first[u]) if j == 0 else int(drafts[u, j - 1]) for u, j in rows]
    vtable = torch.zeros_like(table)
    for r, (u, _) in enumerate(rows):
        vtable[r] = table[u]
    verify = model.decode_forward(padded(ROWS, tok, 0).reshape(ROWS, 1),
                                  padded(ROWS, [PROMPTS[u] + j for u, j in rows], -1), vtable, ver_kv,
                                  write_group=padded(ROWS, [j for _, j in rows], -1), writes=K + 1)
    for r, (u, j) in enumerate(rows):
        assert torch.equal(verify[r, 0], steps[j][u]), f"user {u} position +{j}"

    # The caches are left the same: a next decode step reads them alike.
    nxt = padded(ROWS, [5] * users, 0).reshape(ROWS, 1)
    pos = padded(ROWS, [n + K + 1 for n in PROMPTS], -1)
    a = model.decode_forward(nxt, pos, table, seq_kv)
    b = model.decode_forward(nxt, pos, table, ver_kv)
    assert torch.equal(a[:users], b[:users])


def test_one_write_call_per_user_row_is_required(mesh_device, tiny_root):
    """All of a user's rows written by one paged_fused_update_cache: their cores share a cache tile, the writes race
    on the device, and the simulator leaves those rows undefined (NaN), which the verify logits show."""
    model, (kv, _) = build("llama_gqa", tiny_root, mesh_device, "reference")
    table = tables(model, 1)
    prompt = torch.randint(0, 512, (1, 40), generator=torch.Generator().manual_seed(1), dtype=torch.int64)
    model.prefill_forward(prompt.to(torch.int32), table[:1], kv, [40])
    vtable = table[[0, 0, 0] + [1] * (ROWS - 3)]
    tok = padded(ROWS, [3, 4, 5], 0).reshape(ROWS, 1)
    pos = padded(ROWS, [40, 41, 42], -1)
    raced = model.decode_forward(tok, pos, vtable, kv, enable_trace=False)
    assert torch.isnan(raced[:3]).any()
    apart = model.decode_forward(tok, pos, vtable, kv, enable_trace=False,
                                 write_group=padded(ROWS, [0, 1, 2], -1), writes=3)
    assert torch.isfinite(apart[:3]).all()

