"""On-device sampling (ttnn.topk + ttnn.sampling in the decode step) against vLLM's own sampling math on the same
logits: the distribution of many draws (chi-square), greedy rows, seeds reproducible whoever shares the batch, and
trace replay equal to eager."""

import pytest
import torch
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p

from generator_vllm import TTLlamaForCausalLM
from tests.models.tiny import hf_config, make_tiny_model
from tt_models.sampling import TTSamplingParams

BATCH, BLOCK, NUM_BLOCKS, MAX_SEQ = 8, 32, 64, 256
WIDTH = MAX_SEQ // BLOCK


@pytest.fixture
def llama(mesh_device, tiny_root):
    path = make_tiny_model("llama_gqa", tiny_root)
    model = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ,
                                                     optimizations="performance")
    a = model.model.args
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    return model, kv


def _prefill(model, kv, slots, prompt):
    """The same prompt prefilled into each slot's own pages; returns (tokens, positions, page table) for decode."""
    table = torch.zeros(BATCH, WIDTH, dtype=torch.int32)
    for s in slots:
        table[s] = torch.arange(WIDTH) + 1 + s * WIDTH
    ids = torch.tensor([prompt] * len(slots), dtype=torch.int32)
    logits = model.prefill_forward(ids, table[slots], kv, [len(prompt)] * len(slots))
    tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
    pos = torch.full((BATCH,), -1, dtype=torch.int32)
    for i, s in enumerate(slots):
        tokens[s] = int(logits[i, 0].argmax())
        pos[s] = len(prompt)
    return tokens, pos, table


def _params(configs, seeds=None):
    """configs: per slot (temperature, top_k, top_p); empty slots greedy."""
    t = [c[0] for c in configs] + [0.0] * (BATCH - len(configs))
    k = [c[1] for c in configs] + [1] * (BATCH - len(configs))
    p = [c[2] for c in configs] + [1.0] * (BATCH - len(configs))
    return TTSamplingParams(temperature=t, top_k=k, top_p=p, seed=seeds or [None] * BATCH)


def _vllm_probs(logits, temperature, top_k, top_p):
    """vLLM's sampling distribution for these logits (its own top-k/top-p masking, then softmax)."""
    x = (logits.float() / temperature)[None]
    x = apply_top_k_top_p(x, torch.tensor([top_k]), torch.tensor([top_p]))
    return torch.softmax(x[0], -1)


def _chi2_pvalue(counts, probs):
    """Goodness of fit of observed counts to probs (cells with expected < 5 pooled)."""
    n = counts.sum()
    expected = probs * n
    big = expected >= 5
    obs = torch.cat([counts[big], counts[~big].sum()[None]])
    exp = torch.cat([expected[big], expected[~big].sum()[None]])
    keep = exp > 0
    stat = float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())
    df = int(keep.sum()) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2), torch.tensor(stat / 2))), df


# (temperature, top_k, top_p): vLLM's parameters, each leaving several tokens in play on this state (the tiny
# model's top logit stands out, so only hot temperatures spread). The device takes 1/T and p in bf16: 1/3 is
# 0.33398, a 0.2% hotter logit scale, far below what 500 draws can tell apart.
CONFIGS = [(4.0, 32, 1.0), (2.0, 10, 1.0), (3.0, 32, 0.6), (3.0, 5, 0.8)]


def test_device_distribution_matches_vllm(llama):
    """Every slot decodes the same state (the step rewrites the same cache rows), so each draw is independent: the
    device's draws for each configuration follow vLLM's distribution on the very logits the step computes."""
    model, kv = llama
    slots = list(range(BATCH))
    tokens, pos, table = _prefill(model, kv, slots, list(range(3, 40)))
    logits = model.decode_forward(tokens, pos, table, kv)[:, 0]
    assert torch.equal(logits[0], logits[1])  # same state in every slot
    configs = [CONFIGS[s % len(CONFIGS)] for s in slots]
    params = _params(configs, seeds=[1000 + s for s in slots])
    draws = [model.decode_forward(tokens, pos, table, kv, sampling_params=params if i == 0 else
                                  _params(configs)) for i in range(250)]
    draws = torch.stack(draws)  # [steps, BATCH]
    vocab = logits.shape[-1]
    for c, cfg in enumerate(CONFIGS):
        ids = draws[:, [s for s in slots if s % len(CONFIGS) == c]].reshape(-1)
        counts = torch.bincount(ids, minlength=vocab).float()
        probs = _vllm_probs(logits[0], *cfg)
        assert counts[probs == 0].sum() == 0, f"{cfg}: drew a token vLLM's top-k/top-p excludes"
        pvalue, df = _chi2_pvalue(counts, probs)
        assert df >= 3, f"{cfg}: too few tokens in play to test ({df + 1})"
        # Ignoring temperature, top-k or top-p would move these far off (e.g. T=4 read as 1 puts 92% on one token
        # where vLLM puts 43%).
        assert pvalue > 1e-3, f"{cfg}: device draws do not follow vLLM's distribution (chi2 p={pvalue:.2g})"


def _run(model, kv, slots, configs, seeds, steps=12, enable_trace=True):
    tokens, pos, table = _prefill(model, kv, slots, [5, 9, 17, 33, 2, 8, 1, 40, 41])
    first = _params(configs, seeds)
    out = []
    for i in range(steps):
        params = first if i == 0 else _params(configs)  # seeds apply once, when a user starts
        step = model.decode_forward(tokens, pos, table, kv, enable_trace=enable_trace, sampling_params=params)
        out.append(step.clone())
        for s in slots:
            tokens[s] = step[s]
            pos[s] += 1
    return torch.stack(out)


def test_seeded_users_reproducible_whoever_shares_the_batch(llama):
    model, kv = llama
    hot = (2.0, 32, 1.0)
    alone = _run(model, kv, [0], [hot], [1234] + [None] * (BATCH - 1))
    crowd_cfg = [hot, (1.0, 5, 0.9), (0.0, 1, 1.0), (0.7, 32, 0.5), hot]
    crowd = _run(model, kv, [0, 1, 2, 3, 4], crowd_cfg, [1234, 7, None, 99, 4321] + [None] * (BATCH - 5))
    assert torch.equal(alone[:, 0], crowd[:, 0])
    other_seed = _run(model, kv, [0], [hot], [4321] + [None] * (BATCH - 1))
    assert torch.equal(other_seed[:, 0], crowd[:, 4])  # slot 4 had seed 4321 in the crowd
    assert not torch.equal(alone[:, 0], other_seed[:, 0])


def test_greedy_rows_and_trace(llama):
    """temperature 0, top_k 1 and a tiny top_p are greedy inside a sampled batch; a traced step equals eager."""
    model, kv = llama
    slots = [0, 1, 2, 3]
    tokens, pos, table = _prefill(model, kv, slots, list(range(10, 30)))
    logits = model.decode_forward(tokens, pos, table, kv)[:, 0]
    params = _params([(0.0, 1, 1.0), (1.5, 1, 1.0), (1.5, 32, 0.001), (3.0, 32, 1.0)], [11, 12, 13, 14] + [None] * 4)
    step = model.decode_forward(tokens, pos, table, kv, sampling_params=params)
    assert step[:3].tolist() == [int(logits[s].argmax()) for s in range(3)]
    # The same step left on the device and read back asynchronously (an event marks the copy): the same seeds
    # reseed the same cores, so every row draws the same token again.
    raw = model.decode_forward(tokens, pos, table, kv, read_from_device=False, sampling_params=params)
    assert torch.equal(model.process_decode_output_host(*model.read_decode_output(raw, async_read=True)), step)
    cfg = [(1.0, 32, 1.0), (2.0, 16, 0.9)]
    traced = _run(model, kv, [0, 1], cfg, [5, 6] + [None] * (BATCH - 2), steps=6, enable_trace=True)
    eager = _run(model, kv, [0, 1], cfg, [5, 6] + [None] * (BATCH - 2), steps=6, enable_trace=False)
    assert torch.equal(traced[:, :2], eager[:, :2])


def test_vocabulary_past_topk_width_is_sampled_in_chunks(mesh_device):
    """A vocabulary wider than one topk call (Llama 3's 128k) goes in power-of-two chunks whose ids come back
    global: greedy rows pick the argmax wherever it lies, and sampled ids stay among each row's 32 best."""
    from tt_models.backend import ttnn
    from tt_models.layers.sampling import DeviceSampler, device_params

    vocab, rows = 70000, 32
    sampler = DeviceSampler(vocab, rows)
    assert [b - a for a, b in sampler.chunks] == [35008, 34992]
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 1, rows, vocab, generator=g).to(torch.bfloat16)
    logits[0, 0, 0, 69999] = 30.0  # the last id of the second chunk
    logits[0, 0, 1, 35008] = 30.0  # its first
    logits[0, 0, 2, 17] = 30.0
    params = device_params([0.0] * 3 + [1.0] * (rows - 3), [1] * 3 + [32] * (rows - 3), [1.0] * rows)
    dev = {k: ttnn.from_torch(v, ttnn.uint32 if k == "k" else ttnn.bfloat16, device=mesh_device)
           for k, v in params.items()}
    x = ttnn.from_torch(logits, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh_device)
    ids = ttnn.to_torch(sampler(x, dev["k"], dev["p"], dev["temp"])).reshape(-1).long()
    assert ids[:3].tolist() == [69999, 35008, 17]
    best = torch.topk(logits[0, 0].float(), 32, dim=-1).indices
    assert all(int(ids[r]) in best[r].tolist() for r in range(3, rows))
