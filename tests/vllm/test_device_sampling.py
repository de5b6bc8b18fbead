"""On-device sampling through LLM.generate: greedy on device equals host sampling token for token; temperature /
top-k / top-p requests are drawn on the device (the runner's counter says so) and follow their parameters (top_k=1
and a tiny top_p are greedy, temperature spreads outputs, seeds reproduce whoever shares the batch); a request the
device cannot serve sends its batch to vLLM's sampler; the four decode traces are captured at warmup and never
again. Presence / frequency / repetition penalties and logprobs stay on the device: greedy decoding with penalties
equals the host path token for token, and the logprobs equal vLLM's sampler's."""

import pytest
from vllm import LLM, SamplingParams

from tests.vllm.conftest import TEST_KV_BLOCKS, shutdown, tt_options

PROMPTS = ["The capital of France is", "Write a story about a dragon:", "List the planets:", "Explain gravity:"]


@pytest.fixture(scope="module")
def dev(smollm2_dir, llm):
    """The engine sampling on the device, on `llm`'s profile (both, tests/vllm/conftest.py): `llm` samples the
    same model on the host."""
    import os

    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc of lambdas reading the worker
    engine = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=256, block_size=64, seed=0,
                 num_gpu_blocks_override=TEST_KV_BLOCKS,
                 additional_config=tt_options(llm.tt_profile, sample_on_device_mode="decode_only"))
    yield engine
    shutdown(engine)


# The distribution checks score each draw against HF's logits: on the reference profile those are the model's own.
# On performance the device's logits differ from HF's by the profile's error, which moves top-k / top-p support
# boundaries; what these tests check (each request's parameters honoured by the device's draw) does not depend on
# the weights' dtype, and the equality tests above run on both profiles.
REFERENCE_ONLY = pytest.mark.parametrize("llm", ["reference"], indirect=True)


def _runner(engine, attr):
    return engine.collective_rpc(lambda worker: getattr(worker.model_runner, attr))[0]


def _captures(engine):
    return engine.collective_rpc(lambda worker: worker.model_runner.model.trace_captures)[0]


def _tokens(outs):
    return [list(o.outputs[0].token_ids) for o in outs]


def test_device_greedy_matches_host_and_never_recaptures(llm, dev):
    assert _captures(dev) == 4, ("warmup captures the logits, device-greedy, device-sampling and device-sampling "
                                 "with penalties / logprobs decode traces")
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    host = _tokens(llm.generate(PROMPTS, params))
    before = _runner(dev, "device_sampled_steps")
    on_device = _tokens(dev.generate(PROMPTS, params))
    assert _runner(dev, "device_sampled_steps") > before
    # A batch needing host sampling (min_p), one with penalties, one sampled on device, then greedy again: traces
    # are switched, never re-captured.
    dev.generate(PROMPTS[:2], SamplingParams(temperature=0.8, min_p=0.1, seed=1, max_tokens=4))
    dev.generate(PROMPTS[:2], SamplingParams(temperature=0.8, top_k=20, presence_penalty=0.5, seed=1, max_tokens=4))
    dev.generate(PROMPTS[:2], SamplingParams(temperature=0.8, top_k=20, seed=1, max_tokens=4))
    again = _tokens(dev.generate(PROMPTS[:1], params))
    assert _captures(dev) == 4
    assert on_device == host and again == host[:1]


def test_parameters_take_effect_on_device(dev):
    greedy = _tokens(dev.generate(PROMPTS[:2], SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)))
    before = _runner(dev, "device_sampled_steps")
    top1 = _tokens(dev.generate(PROMPTS[:2], SamplingParams(temperature=1.3, top_k=1, seed=3, max_tokens=10,
                                                             ignore_eos=True)))
    tiny_p = _tokens(dev.generate(PROMPTS[:2], SamplingParams(temperature=1.3, top_k=32, top_p=1e-3, seed=3,
                                                               max_tokens=10, ignore_eos=True)))
    assert top1 == greedy and tiny_p == greedy
    # Temperature spreads: four seeds at T=1.5 give several different continuations, at T=0 one.
    hot = {tuple(t) for t in _tokens(dev.generate([PROMPTS[0]] * 4, [
        SamplingParams(temperature=1.5, top_k=32, seed=s, max_tokens=8, ignore_eos=True) for s in range(4)]))}
    cold = {tuple(t) for t in _tokens(dev.generate([PROMPTS[0]] * 2, [
        SamplingParams(temperature=0, seed=s, max_tokens=8, ignore_eos=True) for s in range(2)]))}
    assert len(hot) >= 3 and len(cold) == 1
    assert _runner(dev, "device_sampled_steps") - before >= 3 * 7  # all of it drawn on the device


def test_seeded_request_reproducible_in_any_device_batch(dev):
    seeded = SamplingParams(temperature=0.9, top_k=30, top_p=0.95, seed=1234, max_tokens=12, ignore_eos=True)
    alone = _tokens(dev.generate([PROMPTS[1]], seeded))[0]
    before = _runner(dev, "device_sampled_steps")
    mixed = _tokens(dev.generate(
        PROMPTS,
        [SamplingParams(temperature=0.7, top_k=5, seed=7, max_tokens=10), seeded,
         SamplingParams(temperature=0, max_tokens=5), SamplingParams(temperature=1.2, top_k=32, max_tokens=12)]))[1]
    assert _runner(dev, "device_sampled_steps") > before
    assert alone == mixed
    assert alone != _tokens(dev.generate([PROMPTS[1]], SamplingParams(
        temperature=0.9, top_k=30, top_p=0.95, seed=4321, max_tokens=12, ignore_eos=True)))[0]


def test_host_only_requests_fall_back_for_their_batch(dev):
    """A request the device cannot sample (top_k beyond 32, min_p, more than 32 logprobs) sends its whole batch to
    vLLM's sampler for those steps, and still honours its parameters."""
    before = _runner(dev, "device_sampled_steps")
    outs = dev.generate(PROMPTS[:2], [SamplingParams(temperature=0.8, top_k=50, seed=2, max_tokens=6),
                                      SamplingParams(temperature=0, max_tokens=6, logprobs=2)])
    assert _runner(dev, "device_sampled_steps") == before
    assert len(outs[1].outputs[0].logprobs) == 6 and all(len(lp) >= 2 for lp in outs[1].outputs[0].logprobs)


PENALTIES = [SamplingParams(temperature=0, max_tokens=16, ignore_eos=True),
             SamplingParams(temperature=0, max_tokens=16, ignore_eos=True, repetition_penalty=1.6),
             SamplingParams(temperature=0, max_tokens=16, ignore_eos=True, frequency_penalty=1.2),
             SamplingParams(temperature=0, max_tokens=16, ignore_eos=True, presence_penalty=1.5,
                            frequency_penalty=0.3)]


def test_greedy_with_penalties_on_device_equals_host(llm, dev):
    """Greedy with penalties in a batch: every decode step sampled on the device (the first token comes from the
    prefill step, on the host), token for token what vLLM's sampler picks on the host; the penalties change the
    output."""
    host = _tokens(llm.generate(PROMPTS, PENALTIES))
    before = _runner(dev, "device_sampled_steps")
    on_device = _tokens(dev.generate(PROMPTS, PENALTIES))
    # at least the 15 decode steps after the prefill (more when the prompts' prefills land in different steps)
    assert _runner(dev, "device_sampled_steps") - before >= 15
    assert on_device == host
    assert on_device[1] != on_device[0] and on_device[2] != on_device[0]
    # reused slots: the same batch again starts from each new request's own history
    assert _tokens(dev.generate(PROMPTS, PENALTIES)) == host


def test_logprobs_on_device_equal_host(llm, dev):
    """logprobs=N (N <= 32) on the device: the sampled token's raw logprob and rank and the N best tokens, as
    vLLM's sampler computes them on the host (raw_logprobs: before penalties)."""
    params = [SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, logprobs=5),
              SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, logprobs=2, repetition_penalty=1.5),
              SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, logprobs=0)]
    host = llm.generate(PROMPTS[:3], params)
    before = _runner(dev, "device_sampled_steps")
    on_device = dev.generate(PROMPTS[:3], params)
    assert _runner(dev, "device_sampled_steps") - before >= 7
    assert _tokens(on_device) == _tokens(host)
    for d, h, p in zip(on_device, host, params, strict=True):
        for step, (ld, lh) in enumerate(zip(d.outputs[0].logprobs, h.outputs[0].logprobs, strict=True)):
            assert list(ld) == list(lh), (p.logprobs, step)  # the same token ids (sampled + top-N), in order
            for tok in lh:
                assert ld[tok].rank == lh[tok].rank, (p.logprobs, step, tok)
                # fp32 logits on both sides; exp / sum / log in another order than torch's log_softmax
                assert abs(ld[tok].logprob - lh[tok].logprob) <= 1e-4, (p.logprobs, step, tok)


def _expected(logits, p: SamplingParams):
    """vLLM's sampling distribution in plain torch: logits / T, the top_k best kept, then the smallest set of those
    (most probable first) whose renormalised mass reaches top_p."""
    import torch

    probs = torch.softmax(logits.double() / p.temperature, -1)
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[probs.topk(p.top_k).indices] = True
    probs = torch.where(keep, probs, 0.0)
    probs /= probs.sum()
    order = probs.argsort(descending=True)
    before = probs[order].cumsum(0) - probs[order]
    probs[order[before >= p.top_p]] = 0.0
    return probs / probs.sum()


def _ks_pvalue(u) -> float:
    """Kolmogorov-Smirnov test of samples against Uniform(0, 1): Stephens' approximation to the statistic's tail."""
    import math

    u, n = sorted(u), len(u)
    d = max(max((i + 1) / n - x, x - i / n) for i, x in enumerate(u))
    lam = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    return min(1.0, max(0.0, 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))))


@REFERENCE_ONLY
def test_device_draws_follow_each_requests_own_distribution(dev, smollm2_hf):
    """Requests with different temperature / top-k / top-p share decode batches and are drawn on the device. Every
    token they get is scored against the distribution its own parameters define over HF's logits for its prefix
    (teacher forcing; the reference profile matches HF): it must lie in that distribution's support (top-k and top-p
    honoured), and its randomised probability integral transform must be uniform (KS test per parameter set).
    Scored against the other set's temperature, the same tokens are rejected, so a runner that dropped or swapped a
    request's temperature fails here."""
    import torch

    cold, hot = dict(temperature=0.6, top_k=8), dict(temperature=1.4, top_k=32, top_p=0.85)
    params = [SamplingParams(**p, seed=100 + i, max_tokens=40, ignore_eos=True) for i, p in enumerate([cold, hot] * 4)]
    prompts = [PROMPTS[i // 2] for i in range(8)]
    before = _runner(dev, "device_sampled_steps")
    outs = dev.generate(prompts, params)
    assert _runner(dev, "device_sampled_steps") - before >= 2 * 39  # two batches of four, decoded on the device

    hf = smollm2_hf
    rng = torch.Generator().manual_seed(0)
    pit = {"cold": [], "hot": [], "cold_as_hot": []}
    for out, p in zip(outs, params, strict=True):
        ids = list(out.prompt_token_ids) + list(out.outputs[0].token_ids)
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0].double()
        start = len(out.prompt_token_ids)
        for pos, tok in enumerate(out.outputs[0].token_ids):
            row = logits[start + pos - 1]
            for name, q in (("cold" if p.temperature < 1 else "hot", p),
                            *((("cold_as_hot", SamplingParams(temperature=hot["temperature"], top_k=p.top_k)),)
                              if p.temperature < 1 else ())):
                probs = _expected(row, q)
                assert probs[tok] > 0 or name == "cold_as_hot", (name, pos, tok, "outside top-k / top-p")
                order = probs.argsort(descending=True)
                rank = int((order == tok).nonzero())
                below = float(probs[order[:rank]].sum())
                pit[name].append(below + float(torch.rand((), generator=rng, dtype=torch.float64)) * float(probs[tok]))
    assert len(pit["cold"]) == len(pit["hot"]) == 160
    for name in ("cold", "hot"):
        assert _ks_pvalue(pit[name]) > 1e-3, (name, _ks_pvalue(pit[name]))
    assert _ks_pvalue(pit["cold_as_hot"]) < 1e-3, _ks_pvalue(pit["cold_as_hot"])


@REFERENCE_ONLY
def test_unset_top_k_drawn_on_device_from_the_32_best_when_the_operator_asks(dev, smollm2_dir, smollm2_hf):
    """A temperature / top-p request without top_k (what OpenAI clients send) is host-only by default: the device
    sees 32 candidates, the request asks for the whole vocabulary. With tt.unset_top_k_on_device it is drawn on the
    device, and every token it gets is one of HF's 32 best at its position."""
    import torch

    params = SamplingParams(temperature=1.0, top_p=0.98, seed=5, max_tokens=24, ignore_eos=True)
    before = _runner(dev, "device_sampled_steps")
    dev.generate([PROMPTS[0]], params)
    assert _runner(dev, "device_sampled_steps") == before  # the default: the host samples it

    engine = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=256, block_size=64, seed=0,
                 num_gpu_blocks_override=TEST_KV_BLOCKS,
                 additional_config={"tt": {"optimizations": "reference", "sample_on_device_mode": "decode_only",
                                           "unset_top_k_on_device": True}})
    try:
        before = _runner(engine, "device_sampled_steps")
        outs = engine.generate(PROMPTS, params)
        assert _runner(engine, "device_sampled_steps") - before >= 23
    finally:
        shutdown(engine)
    hf = smollm2_hf
    outside_top8 = 0
    for out in outs:
        ids = list(out.prompt_token_ids) + list(out.outputs[0].token_ids)
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0]
        start = len(out.prompt_token_ids)
        for pos, tok in enumerate(out.outputs[0].token_ids[1:], start=1):  # the first token is the prefill's (host)
            best = logits[start + pos - 1].topk(32).indices.tolist()
            assert tok in best, (pos, tok)
            outside_top8 += tok not in best[:8]
    assert outside_top8 > 0  # drawn at temperature 1 from all 32 candidates, not a narrower set


def test_unset_top_k_flag_must_be_bool():
    from vllm_patches.tt_config import TTConfig

    with pytest.raises(ValueError, match=r'\["unset_top_k_on_device"\] must be true or false'):
        TTConfig.from_additional_config({"tt": {"unset_top_k_on_device": "yes"}})


@pytest.mark.parametrize("llm", ["performance"], indirect=True)
def test_tied_logits_give_one_token_in_every_slot(llm, dev):
    """"Number: " on SmolLM2 meets exact bf16 ties between its two best logits (the profile whose logits come off
    the device in bf16). One greedy request and three at temperature 2.0 with top_k=1 in one batch, twice, and a
    batch of tiny-top_p requests: every request gives the same tokens, sampled on the host (`llm`) and on the device
    (`dev`); so does the first token, which prefill always samples on the host."""
    prompt, n = "Number: ", 12
    greedy = SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
    top_k1 = SamplingParams(temperature=2.0, top_k=1, max_tokens=n, ignore_eos=True)
    tiny_p = SamplingParams(temperature=1.0, top_p=1e-6, max_tokens=n, ignore_eos=True)
    probe = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=n, ignore_eos=True, logprobs=2))[0]
    ties = [i for i, step in enumerate(probe.outputs[0].logprobs)
            if len(step) >= 2 and len({v.logprob for v in step.values()}) < len(step)]
    assert ties, "no exact tie on this prompt: the test would show nothing"
    expected = list(probe.outputs[0].token_ids)
    for name, engine in (("host", llm), ("device", dev)):
        for batch in ([greedy, top_k1, top_k1, top_k1], [greedy, top_k1, top_k1, top_k1], [tiny_p] * 4):
            outs = engine.generate([prompt] * 4, batch)
            assert _tokens(outs) == [expected] * 4, (name, ties)
