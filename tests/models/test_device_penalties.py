"""On-device presence / frequency / repetition penalties and raw logprobs ("sample_full") against vLLM's own host
code on the same logits: vllm.model_executor.layers.utils.apply_penalties for the penalised logits, vLLM's Sampler
(compute_logprobs + gather_logprobs, logprobs_mode "raw_logprobs") for the sampled token's logprob and rank and the
top-N; greedy decoding with penalties on device equals the host path token for token; a slot handed to a new request
starts from that request's history, not its predecessor's counts."""

import pytest
import torch
from vllm.model_executor.layers.utils import apply_penalties
from vllm.v1.sample.sampler import Sampler

from generator_vllm import TTLlamaForCausalLM
from tests.models.tiny import hf_config, make_tiny_model
from tt_models.backend import ttnn
from tt_models.layers.penalties import DevicePenalties, penalty_params
from tt_models.sampling import TTSamplingParams

BATCH, BLOCK, NUM_BLOCKS, MAX_SEQ = 8, 32, 64, 256
WIDTH = MAX_SEQ // BLOCK
ROWS, V = 32, 512


def _pad(lists, vocab):
    n = max(1, max(len(x) for x in lists))
    return torch.tensor([list(x) + [vocab] * (n - len(x)) for x in lists], dtype=torch.int64)


def _history(g, rows):
    hist = []
    for _ in range(rows):
        prompt = torch.randint(0, V, (int(torch.randint(1, 40, (1,), generator=g)),), generator=g).tolist()
        out = torch.randint(0, 60, (int(torch.randint(0, 30, (1,), generator=g)),), generator=g).tolist()
        hist.append((prompt, out))
    return hist


@pytest.mark.parametrize("dtype", [ttnn.float32, ttnn.bfloat16])
def test_penalised_logits_equal_vllm_apply_penalties(mesh_device, dtype):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(ROWS, V, generator=g) * 4
    if dtype == ttnn.bfloat16:
        logits = logits.to(torch.bfloat16).float()
    hist = _history(g, ROWS)
    pres = (torch.rand(ROWS, generator=g) * 4 - 2).tolist()
    freq = (torch.rand(ROWS, generator=g) * 4 - 2).tolist()
    rep = (torch.rand(ROWS, generator=g) * 1.8 + 0.2).tolist()
    pres[0], freq[0], rep[0] = 0.0, 0.0, 1.0  # a user without penalties keeps its logits
    ref = apply_penalties(logits.clone(), _pad([h[0] for h in hist], V), _pad([h[1] for h in hist], V),
                          torch.tensor(pres), torch.tensor(freq), torch.tensor(rep))
    pen = DevicePenalties(mesh_device, V, ROWS)
    pen.load(hist)
    cols = {k: ttnn.from_torch(v.reshape(1, 1, ROWS, 1), ttnn.float32, layout=ttnn.TILE_LAYOUT, device=mesh_device)
            for k, v in penalty_params(pres, freq, rep).items()}
    x = ttnn.from_torch(logits.reshape(1, 1, ROWS, V), dtype, layout=ttnn.TILE_LAYOUT, device=mesh_device)
    out = ttnn.to_torch(pen.apply(x, cols["rep_a"], cols["rep_b"], cols["freq"], cols["pres"])).float()
    out = out.reshape(ROWS, V)
    assert torch.equal(out[0], logits[0])
    counts = torch.stack([torch.bincount(torch.tensor(h[1], dtype=torch.int64), minlength=V)[:V] for h in hist])
    r = torch.tensor(rep)[:, None]
    scale = logits.abs() * torch.maximum(r, 1 / r) + counts * torch.tensor(freq).abs()[:, None] + \
        torch.tensor(pres).abs()[:, None]
    # Bounds relative to the largest magnitude a value passes through. fp32: the repetition factor
    # 1 + (rep - 1) + (1/rep - rep) rounds within a few ulps of vLLM's 1/rep. bf16: the device rounds the logits to
    # bf16 after each of its three updates (multiply, two subtractions), 2**-9 each.
    tol = 1e-6 * scale + 1e-6 if dtype == ttnn.float32 else 2 ** -7 * scale + 1e-6
    assert ((out - ref).abs() <= tol).all(), float(((out - ref).abs() - tol).max())
    # the state the host loaded is what vLLM counts
    assert torch.equal(ttnn.to_torch(pen.counts).reshape(ROWS, V), counts.float())


def test_update_adds_each_rows_sampled_token(mesh_device):
    pen = DevicePenalties(mesh_device, V, ROWS)
    g = torch.Generator().manual_seed(1)
    hist = _history(g, ROWS)
    pen.load(hist)
    before = ttnn.to_torch(pen.counts).reshape(ROWS, V).clone()
    tokens = torch.randint(0, V, (ROWS,), generator=g)
    ids = ttnn.from_torch(tokens.reshape(1, 1, 1, ROWS), ttnn.uint32, device=mesh_device)
    pen.update(pen.one_hot(ids))
    after = ttnn.to_torch(pen.counts).reshape(ROWS, V)
    assert torch.equal(after - before, torch.nn.functional.one_hot(tokens, V).float())


# ---------------- the decode step ----------------
@pytest.fixture
def llama(mesh_device, tiny_root):
    path = make_tiny_model("llama_gqa", tiny_root)
    model = TTLlamaForCausalLM.initialize_vllm_model(hf_config(path), mesh_device, BATCH, MAX_SEQ,
                                                     optimizations="reference")
    a = model.model.args
    kv = model.allocate_kv_cache((NUM_BLOCKS, a.n_kv_heads, BLOCK, a.head_dim), torch.float32, a.n_layers)
    return model, kv


PROMPTS = [[5, 9, 17, 33, 2, 8, 1, 40], [3, 3, 3, 7, 11], [100, 101, 102], [7] * 9]


def _prefill(model, kv, prompts):
    table = torch.zeros(BATCH, WIDTH, dtype=torch.int32)
    for s in range(len(prompts)):
        table[s] = torch.arange(WIDTH) + 1 + s * WIDTH
    n = max(map(len, prompts))
    ids = torch.tensor([p + [0] * (n - len(p)) for p in prompts], dtype=torch.int32)
    logits = model.prefill_forward(ids, table[: len(prompts)], kv, [len(p) for p in prompts])
    tokens = torch.zeros(BATCH, 1, dtype=torch.int32)
    pos = torch.full((BATCH,), -1, dtype=torch.int32)
    for s, p in enumerate(prompts):
        tokens[s] = int(logits[s, 0].argmax())
        pos[s] = len(p)
    return tokens, pos, table


def _params(pens, outputs, key, prompts=PROMPTS, logprobs=0):
    n = len(prompts)
    pres = [p[0] for p in pens] + [0.0] * (BATCH - n)
    freq = [p[1] for p in pens] + [0.0] * (BATCH - n)
    rep = [p[2] for p in pens] + [1.0] * (BATCH - n)
    hist = [(prompts[s], list(outputs[s])) for s in range(n)] + [None] * (BATCH - n)
    return TTSamplingParams(temperature=[0.0] * BATCH, top_k=[1] * BATCH, top_p=[1.0] * BATCH,
                            presence_penalty=pres, frequency_penalty=freq, repetition_penalty=rep,
                            num_logprobs=[logprobs] * BATCH, token_history=hist, history_key=key)


def _decode(model, kv, pens, steps, on_device, enable_trace=True, logprobs=0):
    """Greedy decoding with penalties: on the device (sample_full), or from the logits with vLLM's
    apply_penalties and argmax on the host. Returns each slot's output tokens (and the device's logprobs)."""
    tokens, pos, table = _prefill(model, kv, PROMPTS)
    n = len(PROMPTS)
    outputs = [[int(tokens[s])] for s in range(n)]
    details = []
    for _ in range(steps):
        if on_device:
            out = model.decode_forward(tokens, pos, table, kv, enable_trace=enable_trace,
                                       sampling_params=_params(pens, outputs, "run", logprobs=logprobs))
            # without penalties or logprobs a greedy batch takes the argmax path: token ids alone
            ids, lp = out if isinstance(out, tuple) else (out, None)
            details.append(lp)
            nxt = ids[:n].tolist()
        else:
            logits = model.decode_forward(tokens, pos, table, kv, enable_trace=enable_trace)[:n, 0]
            pen = apply_penalties(logits.clone(), _pad(PROMPTS, logits.shape[-1]), _pad(outputs, logits.shape[-1]),
                                  torch.tensor([p[0] for p in pens]), torch.tensor([p[1] for p in pens]),
                                  torch.tensor([p[2] for p in pens]))
            nxt = pen.argmax(-1).tolist()
            details.append(logits)
        for s in range(n):
            outputs[s].append(nxt[s])
            tokens[s] = nxt[s]
            pos[s] += 1
    return outputs, details


PENS = [(0.0, 0.0, 1.0), (0.0, 0.0, 1.8), (0.0, 1.5, 1.0), (1.5, 0.0, 1.0)]


def test_greedy_with_penalties_equals_host_path(llama):
    model, kv = llama
    device, _ = _decode(model, kv, PENS, 10, on_device=True)
    host, _ = _decode(model, kv, PENS, 10, on_device=False)
    assert device == host
    eager, _ = _decode(model, kv, PENS, 10, on_device=True, enable_trace=False)
    assert eager == device


def test_penalties_reduce_repeats(llama):
    """Unpenalised greedy decoding of the tiny model loops on few tokens; repetition, frequency and presence
    penalties each make the slots use more distinct tokens (fewer repeats of what they already produced)."""
    model, kv = llama
    plain, _ = _decode(model, kv, [(0.0, 0.0, 1.0)] * 4, 16, on_device=True)
    rep, _ = _decode(model, kv, [(0.0, 0.0, 2.0)] * 4, 16, on_device=True)
    freq, _ = _decode(model, kv, [(0.0, 2.0, 1.0)] * 4, 16, on_device=True)
    pres, _ = _decode(model, kv, [(2.0, 0.0, 1.0)] * 4, 16, on_device=True)

    def repeats(outs):
        return sum(len(o) - len(set(o)) for o in outs)

    assert repeats(rep) < repeats(plain) and repeats(freq) < repeats(plain) and repeats(pres) < repeats(plain), (
        repeats(plain), repeats(rep), repeats(freq), repeats(pres))


def test_logprobs_equal_vllm_sampler(llama):
    model, kv = llama
    n, N = len(PROMPTS), 5
    _, device = _decode(model, kv, PENS, 4, on_device=True, logprobs=N)
    outs, host = _decode(model, kv, PENS, 4, on_device=False)
    sampler = Sampler()
    for step, (lp, logits) in enumerate(zip(device, host, strict=True)):
        raw = sampler.compute_logprobs(logits)
        sampled = torch.tensor([outs[s][step + 1] for s in range(n)])
        ref = sampler.gather_logprobs(raw, N, sampled)
        # fp32 on both sides; the device's exp/log/sum order differs from torch's log_softmax
        assert torch.allclose(lp["logprob"][:n], ref.logprobs[:, 0], atol=1e-4), step
        assert torch.equal(lp["rank"][:n], ref.selected_token_ranks), step
        assert torch.equal(lp["top_ids"][:n, :N], ref.logprob_token_ids[:, 1:].long()), step
        assert torch.allclose(lp["top_logprobs"][:n, :N], ref.logprobs[:, 1:], atol=1e-4), step


def test_reused_slot_starts_from_its_own_history(llama):
    """Slot 0 runs request A for a few steps (its counts build up on the device), then request B takes the slot:
    the next step's state holds B's history plus that step's token, none of A's."""
    model, kv = llama
    tokens, pos, table = _prefill(model, kv, PROMPTS)
    outputs = [[int(tokens[s])] for s in range(len(PROMPTS))]
    for _ in range(4):
        ids, _ = model.decode_forward(tokens, pos, table, kv, sampling_params=_params(PENS, outputs, "A"))
        for s in range(len(PROMPTS)):
            outputs[s].append(int(ids[s]))
    pen = model._penalties
    counts = ttnn.to_torch(pen.counts).reshape(-1, pen.vocab)
    assert counts[0].sum() == 5  # A's first token from the host, four from the device
    b_prompt, b_out = [300, 301], [302]
    hist_outputs = [b_out] + outputs[1:]
    prompts = [b_prompt] + PROMPTS[1:]
    ids, _ = model.decode_forward(tokens, pos, table, kv,
                                  sampling_params=_params(PENS, hist_outputs, "B", prompts=prompts))
    counts = ttnn.to_torch(pen.counts).reshape(-1, pen.vocab)
    expected = torch.zeros(pen.vocab)
    expected[302] += 1
    expected[int(ids[0])] += 1
    assert torch.equal(counts[0], expected)
    prompt = ttnn.to_torch(pen.prompt).reshape(-1, pen.vocab)[0]
    assert prompt.nonzero().reshape(-1).tolist() == b_prompt
