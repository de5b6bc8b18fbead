"""Generator behaviour on a tiny Llama: batch invariance, trace vs eager, prefix reuse through the chunked path,
long prompts prefilled in chunks, on-device greedy, and clear errors for bad input."""

import pytest
import torch

from generator_vllm import TT_CLASSES, TTLlamaForCausalLM
from tests.conftest import pcc
from tests.models.tiny import hf_config, hf_last_logits, load_hf, make_tiny_model
from tt_models.model_args import UnsupportedModelError
from tt_models.sampling import TTSamplingParams

BATCH, BLOCK, NUM_BLOCKS, MAX_SEQ = 8, 32, 160, 512


@pytest.fixture
def llama(mesh_device, tiny_root):
    path = make_tiny_model("llama_gqa", tiny_root)
    model = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ,
                                                     optimizations="reference")
    a = model.model.args
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    return model, kv, path


def prompts(n, lo=20, hi=90, seed=3):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 512, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


def prefill_batch(model, kv, batch_prompts, tables):
    width = max(len(p) for p in batch_prompts)
    tokens = torch.zeros(len(batch_prompts), width, dtype=torch.int32)
    for i, p in enumerate(batch_prompts):
        tokens[i, : len(p)] = torch.tensor(p)
    return model.prefill_forward(tokens, tables, kv, [len(p) for p in batch_prompts])


def greedy(model, kv, batch_prompts, slots, steps, enable_trace=True):
    """Prefill each prompt into its slot's pages, then decode all of them together; returns tokens per prompt."""
    width = MAX_SEQ // BLOCK
    table = torch.zeros(BATCH, width, dtype=torch.int32)
    for s in slots:
        table[s] = torch.arange(width) + 1 + s * width % (NUM_BLOCKS - width - 1)
    logits = prefill_batch(model, kv, batch_prompts, table[slots])
    outs = [[int(logits[i, 0].argmax())] for i in range(len(batch_prompts))]
    for _ in range(steps - 1):
        tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
        pos = torch.full((BATCH,), -1, dtype=torch.int32)
        for i, s in enumerate(slots):
            tokens[s] = outs[i][-1]
            pos[s] = len(batch_prompts[i]) + len(outs[i]) - 1
        step = model.decode_forward(tokens, pos, table, kv, enable_trace=enable_trace)
        for i, s in enumerate(slots):
            outs[i].append(int(step[s, 0].argmax()))
    return outs


def test_batch_invariance(llama):
    model, kv, _ = llama
    ps = prompts(BATCH)
    alone = greedy(model, kv, ps[:1], [5], 16)[0]
    full = greedy(model, kv, ps, [5, 0, 1, 2, 3, 4, 6, 7], 16)[0]
    assert alone == full


def test_trace_equals_eager_and_captures_once(llama):
    model, kv, _ = llama
    ps = prompts(3)
    traced = greedy(model, kv, ps, [0, 3, 6], 12, enable_trace=True)
    eager = greedy(model, kv, ps, [0, 3, 6], 12, enable_trace=False)
    assert traced == eager
    assert model.trace_captures == 1


def test_trace_and_eager_logits_bit_identical(llama):
    model, kv, _ = llama
    p = prompts(1)[0]
    table = torch.zeros(BATCH, MAX_SEQ // BLOCK, dtype=torch.int32)
    table[1] = torch.arange(MAX_SEQ // BLOCK) + 10
    prefill_batch(model, kv, [p], table[1:2])
    tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
    tokens[1] = 7
    pos = torch.full((BATCH,), -1, dtype=torch.int32)
    pos[1] = len(p)
    a = model.decode_forward(tokens, pos, table, kv, enable_trace=False)
    b = model.decode_forward(tokens, pos, table, kv, enable_trace=True)  # rewrites the same cache row
    assert torch.equal(a[1], b[1])
    # Empty slots (position -1) get rows the device leaves unwritten: nothing a caller could use.
    empty = [i for i in range(BATCH) if i != 1]
    assert torch.isnan(a[empty]).all() and torch.isnan(b[empty]).all()


def test_prefix_reuse_matches_full_prefill(llama):
    """A prompt whose first blocks are already cached (vLLM prefix-cache hit) goes through chunked attention over
    the paged cache; its logits must equal a full prefill's."""
    model, kv, _ = llama
    p = prompts(1, 100, 101)[0]
    width = MAX_SEQ // BLOCK
    t1 = (torch.arange(width) + 1).to(torch.int32)[None]
    full = prefill_batch(model, kv, [p], t1)
    # Second request: shares the first 2 blocks (64 tokens), owns fresh blocks after that.
    t2 = t1.clone()
    t2[0, 2:] = torch.arange(width - 2) + 100
    reuse = model.prefill_forward(torch.tensor([p], dtype=torch.int32), t2, kv, [len(p)], start_pos=[64])
    assert pcc(reuse, full) >= 0.9999
    assert (reuse - full).abs().max() <= 2e-2 * full.abs().max()
    assert int(reuse.argmax()) == int(full.argmax())


def test_long_prompt_prefilled_in_chunks(llama):
    model, kv, path = llama
    hf = load_hf(path)
    p = prompts(1, 300, 301)[0]
    model.max_prefill_chunk = 128  # three chunks: 128 + 128 + 44
    table = (torch.arange(MAX_SEQ // BLOCK) + 1).to(torch.int32)[None]
    chunked = model.prefill_forward(torch.tensor([p], dtype=torch.int32), table, kv, [len(p)])
    ref = hf_last_logits(hf, p)
    assert pcc(chunked[0, 0], ref) >= 0.999
    # A chunk size that is not whole blocks would start the next chunk mid-block: refused, before and at prefill.
    model.max_prefill_chunk = 80
    with pytest.raises(ValueError, match="max_prefill_chunk 80 must be a multiple of the KV block size 32"):
        model.prefill_forward(torch.tensor([p], dtype=torch.int32), table, kv, [len(p)])
    a = model.model.args
    with pytest.raises(ValueError, match="max_prefill_chunk 80 must be a multiple of the KV block size 32"):
        model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)


def test_on_device_greedy(llama):
    model, kv, _ = llama
    p = prompts(1)[0]
    table = torch.zeros(BATCH, MAX_SEQ // BLOCK, dtype=torch.int32)
    table[0] = torch.arange(MAX_SEQ // BLOCK) + 1
    greedy_params = TTSamplingParams(temperature=[0.0] * BATCH)
    first = model.prefill_forward(torch.tensor([p], dtype=torch.int32), table[:1], kv, [len(p)],
                                  sampling_params=greedy_params)
    logits = model.prefill_forward(torch.tensor([p], dtype=torch.int32), table[:1], kv, [len(p)])
    assert first.tolist() == [int(logits[0, 0].argmax())]
    tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
    tokens[0] = first[0]
    pos = torch.full((BATCH,), -1, dtype=torch.int32)
    pos[0] = len(p)
    host_logits = model.decode_forward(tokens, pos, table, kv, enable_trace=False)
    dev_tokens = model.decode_forward(tokens, pos, table, kv, sampling_params=greedy_params)
    assert dev_tokens.shape == (BATCH,) and int(dev_tokens[0]) == int(host_logits[0, 0].argmax())
    # read_from_device=False hands back a device result the read-back helpers turn into host tensors
    raw = model.decode_forward(tokens, pos, table, kv, read_from_device=False)
    host = model.process_decode_output_host(*model.read_decode_output(raw, async_read=True))
    assert torch.equal(host[0], host_logits[0]) and torch.isnan(host[1:]).all()
    # what the device path cannot do is refused, never silently ignored
    with pytest.raises(ValueError, match="rank the 32 best tokens: 40 logprobs need host sampling"):
        model.decode_forward(tokens, pos, table, kv,
                             sampling_params=TTSamplingParams(temperature=0.7, top_k=10, num_logprobs=40))
    with pytest.raises(ValueError, match="top_k 50 needs host sampling"):
        model.decode_forward(tokens, pos, table, kv, sampling_params=TTSamplingParams(temperature=0.7, top_k=50))


def test_bad_input_is_refused_clearly(llama, mesh_device):
    model, kv, path = llama
    with pytest.raises(ValueError, match="longer than max_seq_len"):
        model.prefill_forward(torch.zeros(1, MAX_SEQ + 1, dtype=torch.int32),
                              torch.zeros(1, 20, dtype=torch.int32), kv, [MAX_SEQ + 1])
    with pytest.raises(ValueError, match="padded to max_batch_size"):
        model.decode_forward(torch.zeros(3, 1, dtype=torch.int32), torch.zeros(3, dtype=torch.int32),
                             torch.zeros(3, 16, dtype=torch.int32), kv)
    cfg = hf_config(path)
    cfg.architectures = ["GPT2LMHeadModel"]
    with pytest.raises(UnsupportedModelError, match="supported: LlamaForCausalLM, MistralForCausalLM"):
        TTLlamaForCausalLM.initialize_vllm_model(cfg, mesh_device, BATCH, MAX_SEQ)
    assert set(TT_CLASSES) == {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                               "Gemma3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM", "MixtralForCausalLM",
                               "GptOssForCausalLM", "Glm4MoeForCausalLM", "DeepseekV3ForCausalLM"}


def test_converted_weights_are_cached_on_disk(mesh_device, tiny_root, monkeypatch, tmp_path):
    """The first start rounds every weight into its TT dtype and stores it; the second loads the stored tensors."""
    import ttnn_sim.tensor as sim_tensor

    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path))  # empty cache for this test

    path = make_tiny_model("qwen2_bias", tiny_root)
    calls = []
    real = sim_tensor.quantize_block_float
    monkeypatch.setattr(sim_tensor, "quantize_block_float", lambda x, dt: calls.append(dt) or real(x, dt))
    first = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ)
    n_first = len(calls)
    assert n_first == 2 * 5 + 1  # wqkv, wo, w1, w2, w3 of both layers and the LM head, all bfloat8_b
    calls.clear()
    second = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ)
    assert calls == []
    from tt_models.backend import ttnn

    assert torch.equal(ttnn.to_torch(first.model.layers[1].mlp.w2), ttnn.to_torch(second.model.layers[1].mlp.w2))


def test_prefix_cache_hit_equals_cold_prefill_with_block_float_cache(mesh_device, tiny_root):
    """With a bfloat8_b KV cache a cold prefill must attend to K/V as rounded into the cache, as a prefix-cache hit
    (chunked SDPA over the cache) and decode do; attending to unrounded K/V made greedy output depend on the cache
    state (log-probs differed by up to 0.37 on SmolLM2)."""
    path = make_tiny_model("llama_gqa", tiny_root)
    model = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ,
                                                     optimizations="performance")
    a = model.model.args
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    assert kv[0][0][0].dtype.name == "BFLOAT8_B"
    p = torch.tensor([prompts(1, 150, 151)[0]], dtype=torch.int32)
    table = (torch.arange(MAX_SEQ // BLOCK) + 1).to(torch.int32)[None]
    cold = model.prefill_forward(p, table, kv, [p.shape[1]])
    t2 = table.clone()
    t2[0, 3:] = torch.arange(MAX_SEQ // BLOCK - 3) + 40  # first 3 blocks (96 tokens) shared, the rest fresh
    hit = model.prefill_forward(p, t2, kv, [p.shape[1]], start_pos=[96])
    diff = (torch.log_softmax(cold[0, 0], -1) - torch.log_softmax(hit[0, 0], -1)).abs().max()
    assert diff < 1e-3, f"log-probs differ by {float(diff):.3g} between a cold prefill and a prefix-cache hit"


@pytest.mark.parametrize("profile,pcc_min", [("reference", 0.999), ("performance", 0.99)])
def test_sliding_window_prompt_prefilled_in_chunks(profile, pcc_min, mesh_device, tiny_root):
    """A Mistral prompt longer than its window plus a chunk, prefilled in chunks: each chunk attends over the paged
    cache within the window only (chunked SDPA's sliding_window_size), as HF does; then decode continues with it.
    Without the window in chunked prefill the later chunks attend to everything and the logits leave HF's."""
    path = make_tiny_model("mistral_window", tiny_root)  # window 48
    hf = load_hf(path)
    model = TT_CLASSES["MistralForCausalLM"].initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ,
                                                                   optimizations=profile)
    a = model.model.args
    assert a.sliding_window == 48
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    model.max_prefill_chunk = 64  # 200 tokens: chunks 64 + 64 + 64 + 8, each past the window of the one before
    p = prompts(1, 200, 201, seed=11)[0]
    width = MAX_SEQ // BLOCK
    table = torch.zeros(BATCH, width, dtype=torch.int32)
    table[0] = torch.arange(width) + 1
    logits = model.prefill_forward(torch.tensor([p], dtype=torch.int32), table[:1], kv, [len(p)])
    ref = hf_last_logits(hf, p)
    assert pcc(logits[0, 0], ref) >= pcc_min
    ids = p + [int(ref.argmax())]
    tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
    tokens[0] = ids[-1]
    pos = torch.full((BATCH,), -1, dtype=torch.int32)
    pos[0] = len(ids) - 1
    out = model.decode_forward(tokens, pos, table, kv, enable_trace=False)
    assert pcc(out[0, 0], hf_last_logits(hf, ids)) >= pcc_min
