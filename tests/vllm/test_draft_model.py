"""Speculative decoding with a draft model (`speculative_config={"model": DRAFT, "num_speculative_tokens": k}`,
vLLM's method='draft_model'): a second TT model on the target's mesh drafts greedily in its own KV cache, addressed
by the target's block ids (vllm_patches/draft_model.py).

The target is SmolLM2 cut to its first layers (tests/vllm/conftest.py); the drafts come from the same checkpoint cut
shorter (a smaller model of the same tokenizer, as a user pairs Llama-3.2-1B with Llama-3.1-8B) and from the target
itself. Greedy output equals the plain engine's token for token, at a batch with a prompt prefilled in chunks and
with prefix-cache hits (one of them leaving a single prompt token, which vLLM pads with placeholder drafts). With
the target as its own draft every real draft must be accepted: its cache holds exactly the K/V the target's holds
(prefills mirrored, the catch-up after a verify step fed at the right positions), so its greedy picks are the
target's, bit for bit."""

import pytest
from vllm import LLM, SamplingParams, TokensPrompt

from tests.vllm.conftest import shutdown, tt_options
from tests.vllm.metrics import counter, spec_counts

K = 3
COMMON = dict(max_num_seqs=8, max_model_len=512, block_size=64, max_num_batched_tokens=160,
              num_gpu_blocks_override=96, seed=0, additional_config=tt_options("performance"))


def copyable(i: int) -> str:
    name = ["add", "mul", "sub", "scale", "shift", "clip", "norm", "mean"][i % 8]
    return f"def {name}{i}(a, b):\n    return a + b * {i}\n\n" * 3 + f"def {name}{i}("


LONG = "Summarize with quotes: " + "The river rose by two meters and the bridge was closed for a week. " * 10


@pytest.fixture(scope="module")
def draft_dir(smollm2_dir, tmp_path_factory) -> str:
    from tests.models.tiny import first_layers

    return str(first_layers(smollm2_dir, tmp_path_factory.mktemp("draft"), 2))


@pytest.fixture(scope="module")
def plain(short_dir):
    engine = LLM(model=short_dir, **COMMON)
    yield engine
    shutdown(engine)


def drafted(target: str, draft: str) -> LLM:
    return LLM(model=target, speculative_config={"model": draft, "num_speculative_tokens": K},
               disable_log_stats=False, **COMMON)


def greedy(engine, prompts, n=16):
    outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=n, ignore_eos=True))
    return [list(o.outputs[0].token_ids) for o in outs]


def test_a_smaller_draft_model_keeps_greedy_output(plain, short_dir, draft_dir):
    tok = plain.get_tokenizer()
    assert len(tok(LONG).input_ids) > 128  # prefilled in chunks of the 160-token budget
    # A 65-token prompt: sent again, 64 tokens come from the prefix cache and one is left to prefill.
    odd = TokensPrompt(prompt_token_ids=tok(LONG).input_ids[:65])
    engine = drafted(short_dir, draft_dir)
    try:
        for prompts in ([copyable(0)], [copyable(i) for i in range(7)] + [LONG], [odd], [odd, LONG, copyable(9)]):
            assert greedy(engine, prompts) == greedy(plain, prompts)
        drafts, accepted = spec_counts(engine)
        assert counter(engine, "vllm:prefix_cache_hits") >= 64
    finally:
        shutdown(engine)
    # The shorter model's drafts are taken often, not always: both the accept and the reject paths ran.
    assert 0 < accepted < drafts, (accepted, drafts)


def assert_every_self_draft_accepted(engine: LLM, plain: LLM) -> None:
    """The target as its own draft: the plain engine's tokens, every draft accepted; shuts the engine down."""
    prompts = [copyable(i) for i in range(7)] + [LONG]
    try:
        assert greedy(engine, prompts, n=24) == greedy(plain, prompts, n=24)
        drafts, accepted = spec_counts(engine)
    finally:
        shutdown(engine)
    # 8 requests x 23 tokens after the first: about 23 / (K + 1) verify steps each, all drafts kept.
    assert drafts >= 8 * 4 * K and accepted == drafts, (accepted, drafts)


def test_the_target_as_its_own_draft_has_every_draft_accepted(plain, short_dir):
    assert_every_self_draft_accepted(drafted(short_dir, short_dir), plain)


def test_the_target_as_its_own_draft_on_two_replicas(plain, short_dir, monkeypatch):
    """Data parallel 2 on a (1, 2) mesh: the draft is a second model of the same replicas, its replica r's cache
    indexed by replica r's block ids, its passes on each request's slot. Every draft accepted and the plain
    engine's tokens hold only if each replica's draft cache holds its own requests' K/V."""
    monkeypatch.setenv("MESH_DEVICE", "(1, 2)")
    engine = LLM(model=short_dir, speculative_config={"model": short_dir, "num_speculative_tokens": K},
                 disable_log_stats=False, **dict(COMMON, additional_config=tt_options("performance", data_parallel=2)))
    if "DataParallel" not in repr(engine):
        shutdown(engine)
        raise AssertionError(f"not data parallel: {engine!r}")
    assert_every_self_draft_accepted(engine, plain)


def test_a_draft_without_a_tt_implementation_is_refused_at_start():
    """The draft runs on the device too: a family the TT models do not implement is refused with the reason (a
    draft of another vocabulary size vLLM refuses itself)."""
    from types import SimpleNamespace

    from vllm_patches.spec_decode import check_speculative_config
    from vllm_patches.tt_config import TTConfig

    draft = SimpleNamespace(model="gpt2", hf_config=SimpleNamespace(architectures=["GPT2LMHeadModel"]))
    spec = SimpleNamespace(method="draft_model", num_speculative_tokens=K, draft_model_config=draft)
    with pytest.raises(ValueError, match=r"draft model 'gpt2': model architectures \['GPT2LMHeadModel'\] have no TT"):
        check_speculative_config(spec, TTConfig())
