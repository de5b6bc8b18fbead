"""LLM.generate on the TT platform (simulated device) with SmolLM2, on both profiles (tests/vllm/conftest.py): greedy
output equals HF token for token on `reference`, and on `performance` agrees with HF at least as often as the
profile's accuracy floor (teacher forced: 90% top-1, 98% top-5), with requests joining and leaving a 4-sequence
batch mid-flight; request isolation; stop/max_tokens handling; clear errors for bad requests while the others
finish."""

import pytest
import torch
from vllm import SamplingParams

from tests.models.test_accuracy import FLOORS
from tests.vllm.conftest import check_against_hf, hf_agreement

PROMPTS = [
    "The capital of France is",
    "Write a short poem about the ocean:",
    "List three prime numbers:",
    "Once upon a time, in a small village near the mountains, there lived an old clockmaker who",
    "def fibonacci(n):",
    "Translate to French: good morning",
    "The three primary colors are",
    "Question: What is 12 times 12?\nAnswer:",
]


@pytest.fixture(scope="module")
def hf(smollm2_hf):
    return smollm2_hf


def test_model_description(llm):
    assert "TTLlamaForCausalLM(family=llama, layers=30" in repr(llm)


def test_greedy_matches_hf_with_requests_joining_and_leaving(llm, hf):
    # Different lengths and max_tokens: with max_num_seqs=4, short requests finish and waiting ones join.
    params = [SamplingParams(temperature=0, max_tokens=8 + 4 * (i % 3), ignore_eos=True) for i in range(len(PROMPTS))]
    outs = llm.generate(PROMPTS, params)
    assert len(outs) == len(PROMPTS)
    for out, p in zip(outs, params, strict=True):
        assert len(out.outputs[0].token_ids) == p.max_tokens
        if llm.tt_profile == "reference":
            check_against_hf(hf, list(out.prompt_token_ids), list(out.outputs[0].token_ids))
    if llm.tt_profile != "reference":
        top1, top5, n = hf_agreement(hf, outs)
        assert n == sum(p.max_tokens for p in params)
        floor1, floor5 = FLOORS[llm.tt_profile]
        assert top1 >= floor1 and top5 >= floor5, (top1, top5)
    assert "Paris" in outs[0].outputs[0].text


def test_seeded_sampling_is_isolated_from_batch(llm):
    seeded = SamplingParams(temperature=0.9, top_k=40, top_p=0.95, seed=1234, max_tokens=12)
    alone = llm.generate([PROMPTS[1]], seeded)[0].outputs[0].token_ids
    mixed = llm.generate(
        [PROMPTS[0], PROMPTS[1], PROMPTS[2]],
        [SamplingParams(temperature=0.7, seed=7, max_tokens=10), seeded,
         SamplingParams(temperature=0, max_tokens=5, presence_penalty=0.5, repetition_penalty=1.2)],
    )[1].outputs[0].token_ids
    assert list(alone) == list(mixed)


def test_greedy_identical_across_batch_compositions(llm):
    greedy = SamplingParams(temperature=0, max_tokens=10)
    alone = llm.generate([PROMPTS[6]], greedy)[0].outputs[0].token_ids
    in_batch = llm.generate(PROMPTS[3:7], greedy)[3].outputs[0].token_ids
    assert list(alone) == list(in_batch)


def test_stop_strings_max_tokens_and_logprobs(llm):
    out = llm.generate(["Count: 1, 2, 3,"], SamplingParams(temperature=0, max_tokens=30, stop=[" 6"]))[0].outputs[0]
    assert out.finish_reason == "stop" and " 6" not in out.text and "5" in out.text
    out = llm.generate([PROMPTS[0]], SamplingParams(temperature=0, max_tokens=3, logprobs=5))[0].outputs[0]
    assert out.finish_reason == "length" and len(out.token_ids) == 3
    assert len(out.logprobs) == 3 and all(len(lp) >= 5 for lp in out.logprobs)
    for tok, lp in zip(out.token_ids, out.logprobs, strict=True):
        assert tok in lp and lp[tok].rank == 1  # greedy picks the top-ranked token


def test_too_long_prompt_is_refused_and_others_finish(llm):
    long_prompt = "hello " * 600  # > max_model_len 512 tokens
    with pytest.raises(Exception, match="maximum context length is 512 tokens"):
        llm.generate([long_prompt], SamplingParams(max_tokens=4))
    outs = llm.generate([PROMPTS[0], PROMPTS[2]], SamplingParams(temperature=0, max_tokens=4))
    assert all(len(o.outputs[0].token_ids) == 4 for o in outs)


@pytest.mark.parametrize("params,match", [
    (dict(logprobs=21), "logprobs of 21, which is greater than max allowed: 20"),
])
def test_unsupported_options_get_clear_errors(llm, params, match):
    with pytest.raises(Exception, match=match):
        llm.generate([PROMPTS[0]], SamplingParams(max_tokens=2, **params))
    assert len(llm.generate([PROMPTS[0]], SamplingParams(max_tokens=2))[0].outputs[0].token_ids) == 2


def test_prefix_cache_hit_gives_the_same_output(llm):
    """The second request reuses the cached blocks of the first (vLLM prefix caching) and is prefilled from there
    through chunked attention over the paged cache; greedy output must not change."""
    shared = "You are a helpful assistant. " * 30  # ~180 tokens: several full 64-token blocks
    params = SamplingParams(temperature=0, max_tokens=8)
    first = llm.generate([shared + "What is 2 + 2?"], params)[0]
    second = llm.generate([shared + "What is 2 + 2?"], params)[0]
    assert (second.num_cached_tokens or 0) >= 128
    assert list(second.outputs[0].token_ids) == list(first.outputs[0].token_ids)


def test_sampling_parameters_take_effect(llm, hf):
    """Each parameter changes what is drawn, checked against the first token's distribution (HF's on reference, the
    engine's own logprobs on performance): a runner that ignored temperature, top-k or top-p would fail here
    (seeded, so the draws are fixed)."""
    prompt = PROMPTS[6]
    if llm.tt_profile == "reference":  # HF's first-token distribution is the model's (fp32, HF-exact)
        ids = llm.get_tokenizer()(prompt)["input_ids"]
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0, -1]
        top2 = set(torch.topk(logits, 2).indices.tolist())
        argmax = int(logits.argmax())
    else:  # bfloat8_b weights: the model's own ranking, from its logprobs. Its logits come off the device in bf16,
        # where neighbours can tie exactly (here the second and third): top-k keeps the first k of the best-first
        # order, equal values lowest id first (docs/tie-order.md), so "the top 2" are the first two of that order.
        lp = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=1, logprobs=8))[0].outputs[0].logprobs[0]
        order = sorted(lp, key=lambda t: (-lp[t].logprob, t))
        top2 = set(order[:2])
        argmax = order[0]
        assert lp[order[0]].logprob > lp[order[1]].logprob  # a tie at the top would be ambiguous

    def draws(**kw):
        params = [SamplingParams(max_tokens=1, seed=s, **kw) for s in range(24)]
        return [o.outputs[0].token_ids[0] for o in llm.generate([prompt] * len(params), params)]

    hot = draws(temperature=2.0)
    assert len(set(hot)) > 2 and set(hot) - top2, "temperature 2 must spread the draws (it was ignored)"
    top_k = draws(temperature=2.0, top_k=2)
    assert set(top_k) == top2, f"top_k=2 must draw only, and at temperature 2 both of, HF's top 2 {top2}: {top_k}"
    assert draws(temperature=2.0, top_p=1e-6) == [argmax] * 24, "top_p ~ 0 must keep only the most likely token"
