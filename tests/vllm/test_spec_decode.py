"""Speculative decoding through vLLM (--speculative-config, n-gram drafts): greedy output token for token the
non-speculative engine's, at batch 1 and 32, with prefix-cache hits and chunked prefills; sampled output with the
non-speculative distribution (a permutation test that rejects the output of a verify step that skips rejection);
vLLM's spec-decode metrics; refusals at engine start.

Both engines run the same configuration (chunked prefill at a 128-token budget, prefix caching) except
speculation, on SmolLM2 cut to its first layers (tests/vllm/conftest.py: where one engine configuration is held to
another token for token), on the default profile (`performance`). The verify step computes each row as a decode step
would, bit for bit, on every profile and tiny family (tests/models/test_spec_verify.py, `reference` included), so the
outputs are identical with no near-tie excuse; what this file adds is the runner's plumbing, which no profile
changes."""

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
import torch
from vllm import LLM, SamplingParams

from tests.vllm.conftest import shutdown, tt_options
from tests.vllm.metrics import counter

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
COMMON = dict(max_num_seqs=32, max_model_len=512, block_size=64, max_num_batched_tokens=160,
              num_gpu_blocks_override=320, seed=0)


def copyable(i: int) -> str:
    """Text that repeats itself (code edits, quoted summaries): what n-gram drafts copy from."""
    name = ["add", "mul", "sub", "scale", "shift", "clip", "norm", "mean"][i % 8]
    body = f"def {name}{i}(a, b):\n    return a + b * {i}\n\n"
    return body * 3 + f"def {name}{i}("


def long_copyable() -> str:
    """Over the 128-token budget: prefilled in chunks."""
    para = "The report says that the river rose by two meters and that the bridge was closed for a week. "
    return "Summarize with quotes: " + para * 8 + "Summary: The report says that"


@pytest.fixture(scope="module")
def engines(short_dir):
    options = dict(COMMON, additional_config=tt_options("performance"))
    plain = LLM(model=short_dir, **options)
    spec = LLM(model=short_dir, speculative_config=NGRAM, disable_log_stats=False, **options)
    yield plain, spec
    shutdown(spec)
    shutdown(plain)


def greedy(engine, prompts, n=12):
    outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=n, ignore_eos=True))
    return [list(o.outputs[0].token_ids) for o in outs]


def test_greedy_equals_the_plain_engine(engines):
    plain, spec = engines
    batch = [copyable(i) for i in range(31)] + [long_copyable()]
    assert len(spec.get_tokenizer()(long_copyable()).input_ids) > 128  # prefilled in chunks
    drafts0 = counter(spec, "vllm:spec_decode_num_drafts")
    accepted0 = counter(spec, "vllm:spec_decode_num_accepted_tokens")
    # Batch 1, then batch 32, then the long prompt again (a prefix-cache hit) next to a fresh one.
    for prompts in ([copyable(40)], batch, [long_copyable(), copyable(41)]):
        assert greedy(spec, prompts) == greedy(plain, prompts)
    drafts = counter(spec, "vllm:spec_decode_num_drafts") - drafts0
    accepted = counter(spec, "vllm:spec_decode_num_accepted_tokens") - accepted0
    # Speculation ran, and verify steps accepted drafts: fewer model steps than tokens.
    assert drafts > 0 and accepted > 0
    assert counter(spec, "vllm:prefix_cache_hits") > 0


def test_sampling_keeps_the_target_distribution(engines):
    """The second sampled token (the first one a verify step decides) of 64 seeded requests at temperature 1, after a
    prompt ending in the model's own greedy loop (so vLLM's drafter proposes for most of them). Two permutation tests
    between the speculative and the plain engine's samples, each passing at p >= 0.001: the total-variation distance
    of the second token's frequencies, and, over the requests the drafter proposes for, how often the second token is
    the draft. Their power, on the same samples: a verify step that skipped rejection would accept every draft, so
    the plain samples with the draft in place of the second token wherever the drafter proposes one must fail the
    second test (p < 0.001)."""
    from vllm import TokensPrompt
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer

    plain, spec = engines
    base = spec.get_tokenizer()(copyable(0)).input_ids
    loop = greedy(plain, [TokensPrompt(prompt_token_ids=base)])[0]
    prompt = base + loop * 2
    n = 64
    drafter = NgramProposer(spec.llm_engine.vllm_config)

    def sample(engine):
        params = [SamplingParams(temperature=1.0, max_tokens=2, seed=1000 + i, ignore_eos=True) for i in range(n)]
        outs = engine.generate([TokensPrompt(prompt_token_ids=prompt)] * n, params)
        firsts, seconds = [o.outputs[0].token_ids[0] for o in outs], [o.outputs[0].token_ids[1] for o in outs]
        history = np.zeros((n, COMMON["max_model_len"]), dtype=np.int32)
        history[:, : len(prompt)] = prompt
        history[:, len(prompt)] = firsts
        lengths = np.full(n, len(prompt) + 1, dtype=np.int32)
        rows = COMMON["max_num_seqs"]  # the drafter's buffers hold one batch
        drafts = [d for s in range(0, n, rows)
                  for d in drafter.propose(NGRAM["num_speculative_tokens"], [[t] for t in firsts[s:s + rows]],
                                           lengths[s:s + rows], history[s:s + rows])]
        return seconds, drafts

    got, got_drafts = sample(spec)
    want, want_drafts = sample(plain)
    drafted = [i for i, d in enumerate(want_drafts) if d]
    assert len(drafted) >= n // 2 and sum(bool(d) for d in got_drafts) >= n // 2

    def took_draft(seconds, drafts):
        return [int(t == d[0]) for t, d in zip(seconds, drafts, strict=True) if d]

    assert permutation_p(got, want) >= 1e-3
    assert permutation_p(took_draft(got, got_drafts), took_draft(want, want_drafts)) >= 1e-3
    skipped = [d[0] if d else t for t, d in zip(want, want_drafts, strict=True)]
    assert permutation_p(took_draft(skipped, want_drafts), took_draft(want, want_drafts)) < 1e-3


def permutation_p(a: list[int], b: list[int], rounds: int = 2000) -> float:
    """p-value of the total-variation distance between two samples' token frequencies under random relabelling."""
    tokens = sorted(set(a) | set(b))
    index = {t: i for i, t in enumerate(tokens)}
    pooled = torch.tensor([index[t] for t in a + b])

    def tv(x: torch.Tensor, y: torch.Tensor) -> float:
        fx = torch.bincount(x, minlength=len(tokens)) / len(x)
        fy = torch.bincount(y, minlength=len(tokens)) / len(y)
        return float((fx - fy).abs().sum() / 2)

    observed = tv(pooled[: len(a)], pooled[len(a):])
    g = torch.Generator().manual_seed(0)
    hits = sum(tv((s := pooled[torch.randperm(len(pooled), generator=g)])[: len(a)], s[len(a):]) >= observed
               for _ in range(rounds))
    return (hits + 1) / (rounds + 1)


@pytest.mark.parametrize("config,reason", [
    ({"method": "eagle", "model": "x", "num_speculative_tokens": 2}, "EAGLE"),
    ({"method": "medusa", "model": "x", "num_speculative_tokens": 2}, "Medusa"),
])
def test_unsupported_methods_are_refused_at_start(config, reason):
    from vllm_patches.spec_decode import check_speculative_config
    from vllm_patches.tt_config import TTConfig

    class Spec:
        method = config["method"]
        num_speculative_tokens = config["num_speculative_tokens"]

    with pytest.raises(ValueError, match=reason):
        check_speculative_config(Spec, TTConfig())
    Spec.method = "ngram"
    check_speculative_config(Spec, TTConfig(data_parallel=2))  # n-gram drafts verify on each request's replica


def test_structured_output_with_drafts(engines):
    """A regex-constrained request whose pattern repeats (so drafts are proposed and the grammar must vet them and
    mask every scored position): the output matches the pattern and equals the plain engine's."""
    import re

    from vllm.sampling_params import StructuredOutputsParams

    plain, spec = engines
    pattern = r"(ab ){6}cd"
    params = SamplingParams(temperature=0, max_tokens=32, structured_outputs=StructuredOutputsParams(regex=pattern))
    prompt = "Write ab six times, then cd: ab ab ab ab ab ab cd. Again:"
    drafts0 = counter(spec, "vllm:spec_decode_num_draft_tokens")
    got = spec.generate([prompt], params)[0].outputs[0]
    assert re.fullmatch(pattern, got.text)
    assert list(got.token_ids) == list(plain.generate([prompt], params)[0].outputs[0].token_ids)
    assert counter(spec, "vllm:spec_decode_num_draft_tokens") > drafts0


def prometheus(port: int) -> dict[str, float]:
    """The server's /metrics, summed over label sets per metric name."""
    values: dict[str, float] = {}
    for m in re.finditer(r"^(vllm:\w+)(?:\{[^}]*\})? ([-\d.e+]+)$",
                         requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text, re.M):
        values[m.group(1)] = values.get(m.group(1), 0.0) + float(m.group(2))
    return values


def test_vllm_serve_with_drafts_preempts_and_aborts(engines, short_dir, short_hf, tmp_path):
    """`vllm serve --speculative-config` as a user types it, with a KV cache too small for its batch: a streamed
    request closed by its client is aborted (generation stops: far fewer tokens than it asked for are produced, and
    its blocks come back), then four concurrent requests that must preempt each other give the plain engine's greedy
    tokens (up to a logged bf16 tie on this profile: a recomputed request prefills what it had decoded) with drafts
    accepted along the way."""
    from tests.vllm.conftest import assert_same_greedy, vllm_serve

    plain = engines[0]
    log = tmp_path / "serve.log"
    # 6 usable blocks of 64 tokens for 4 requests that each grow to 2: some must be preempted.
    flags = ["--served-model-name", "short", "--speculative-config", json.dumps(NGRAM), "--max-num-seqs", "4",
             "--max-model-len", "256", "--block-size", "64", "--num-gpu-blocks-override", "7",
             "--no-enable-prefix-caching"]
    with vllm_serve(short_dir, *flags, log=log) as (client, port):
        deadline = time.time() + 300
        tok = plain.get_tokenizer()

        # Abort: a 200-token stream closed after 5 chunks.
        before = prometheus(port).get("vllm:generation_tokens_total", 0.0)
        stream = client.completions.create(model="short", prompt=copyable(50), max_tokens=200, temperature=0,
                                           stream=True, extra_body={"ignore_eos": True})
        for i, _ in enumerate(stream):
            if i == 4:
                break
        stream.close()
        while prometheus(port).get("vllm:num_requests_running", 0.0) > 0:
            assert time.time() < deadline, "the closed stream's request kept running"
            time.sleep(0.5)
        produced = prometheus(port).get("vllm:generation_tokens_total", 0.0) - before
        assert 5 <= produced < 100, produced
        assert prometheus(port).get("vllm:kv_cache_usage_perc", 1.0) == 0.0

        # Preemption: four requests at once.
        prompts = [copyable(60 + i) for i in range(4)]
        ids = [tok(p).input_ids[:60] for p in prompts]  # admitted in one block each, all four at once
        assert all(len(x) <= 64 < len(x) + 48 for x in ids)  # then each grows to 2

        def ask(x: list[int]) -> list[int]:
            r = client.completions.create(model="short", prompt=x, max_tokens=48, temperature=0,
                                          extra_body={"ignore_eos": True, "return_token_ids": True})
            return list(r.choices[0].model_extra["token_ids"])

        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(ask, ids))
        metrics = prometheus(port)
        assert metrics.get("vllm:num_preemptions_total", 0.0) > 0, log.read_text()[-3000:]
        assert metrics.get("vllm:spec_decode_num_accepted_tokens_total", 0.0) > 0
        assert metrics.get("vllm:kv_cache_usage_perc", 1.0) == 0.0
    want = greedy(plain, [{"prompt_token_ids": x} for x in ids], n=48)
    assert_same_greedy(plain, short_hf, ids, got, want, "performance")
