"""Tensor parallel through stock vLLM: MESH_DEVICE=T3K opens a 1x8 mesh with the 1-D fabric and the model is split
over its 8 chips (each chip caching its share of KV heads: vLLM's KV cache spec is per chip); with data_parallel 2
the same mesh serves two replicas, each tensor parallel over 4 chips; MESH_DEVICE="(2, 4)" alone splits the model two
ways over all 8 chips. Greedy output must equal the single-device engine's token for token on reference, and on
performance be as close to HF as the single device's (see `single`).

SmolLM2-135M has 9 attention heads, which split over no even chip count, so the test serves the widened tiny Llama
of tests/models/test_tensor_parallel.py (8 heads, 2 KV heads: replicated on 8 chips) from token ids."""

import pytest
from vllm import LLM, SamplingParams

from tests.models.tiny import load_hf, make_wide_model
from tests.vllm.conftest import PROFILES, TEST_KV_BLOCKS, hf_agreement_ids, shutdown, tt_options
from tests.vllm.metrics import spec_counts

PROMPTS = [{"prompt_token_ids": list(range(5 + 40 * i, 30 + 47 * i))} for i in range(3)]


@pytest.fixture(scope="module")
def wide_llama(tmp_path_factory):
    return str(make_wide_model("llama_gqa", tmp_path_factory.mktemp("tp_models")))


PARAMS = [SamplingParams(temperature=0, max_tokens=5 + 3 * i, ignore_eos=True, detokenize=False)
          for i in range(len(PROMPTS))]


def _engine(path: str, profile: str, **tt) -> LLM:
    return LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=256, block_size=32, seed=0,
               num_gpu_blocks_override=TEST_KV_BLOCKS, additional_config=tt_options(profile, **tt))


def _generate(path: str, profile: str, **tt) -> tuple[list[list[int]], str]:
    engine = _engine(path, profile, **tt)
    try:
        return [list(o.outputs[0].token_ids) for o in engine.generate(PROMPTS, PARAMS)], repr(engine)
    finally:
        shutdown(engine)


@pytest.fixture(scope="module", params=PROFILES)
def single(wide_llama, request):
    """The single-device engine (MESH_DEVICE unset) on each profile and a check of another configuration's greedy
    tokens against it. Reference: token for token the same. Performance: the chips' bf16 partial sums move this
    random model's logits by more than a bf16 tie (measured: a 0.5 gap at a logit of 23 decided the other way), and
    its flat next-token distributions leave even one chip at 83% of HF's top-1 over these 24 tokens; so each
    configuration's tokens, teacher forced through HF, must agree with HF's top-1 and top-5 as often as the single
    device's do, less at most one token (measured: 2x4 and 1x8 as one chip, 2 x 1x4 one token less)."""
    engine = _engine(wide_llama, request.param)
    tokens = [list(o.outputs[0].token_ids) for o in engine.generate(PROMPTS, PARAMS)]
    shutdown(engine)
    hf = load_hf(wide_llama)
    prompts = [p["prompt_token_ids"] for p in PROMPTS]

    def check(got: list[list[int]]) -> None:
        if request.param == "reference":
            assert got == tokens
            return
        one_chip, mesh = hf_agreement_ids(hf, prompts, tokens), hf_agreement_ids(hf, prompts, got)
        slack = 100 / one_chip[2]
        assert mesh[2] == one_chip[2] and mesh[0] >= one_chip[0] - slack and mesh[1] >= one_chip[1] - slack, (
            mesh, one_chip)

    yield request.param, check


def test_t3k_tensor_parallel_and_tp_x_dp_match_single_device(wide_llama, single, monkeypatch):
    profile, check = single
    monkeypatch.setenv("MESH_DEVICE", "T3K")
    tp, inspection = _generate(wide_llama, profile)
    assert "mesh=(1, 8)" in inspection and "tensor_parallel=8" in inspection
    check(tp)
    dp_tp, inspection = _generate(wide_llama, profile, data_parallel=2)
    assert "DataParallel" in inspection and "tensor_parallel=4" in inspection
    check(dp_tp)


def test_2d_mesh_two_way_tensor_parallel_matches_single_device(wide_llama, single, monkeypatch):
    """MESH_DEVICE="(2, 4)" without data parallel: the model split two ways over all 8 chips (heads over the 2
    rows, the residual over the 4 columns, as tt_transformers on a Galaxy); greedy output equals one chip's."""
    profile, check = single
    monkeypatch.setenv("MESH_DEVICE", "(2, 4)")
    two_way, inspection = _generate(wide_llama, profile)
    assert "mesh=(2, 4)" in inspection and "tensor_parallel=8 two-way 2x4" in inspection
    check(two_way)


# Prompts that repeat themselves (what n-gram drafts copy from), as token ids.
REPEATING = [{"prompt_token_ids": list(range(7 + 11 * i, 19 + 11 * i)) * 3 + list(range(7 + 11 * i, 10 + 11 * i))}
             for i in range(6)]


def test_2d_mesh_speculation_matches_single_device(wide_llama, monkeypatch, capfd):
    """N-gram drafts, then a draft model, on a 2x4 mesh whose chip columns share the users out (each column decodes
    and caches 8 of the 32 rows): a request's verify rows stay in its slot's column. Greedy output equals one
    chip's without speculation, token for token (reference), with drafts accepted and requests on two columns at
    once (slots 0-7 and 8-9 with 10 sequences). Drafts longer than a column's rows are refused at start."""
    from tests.vllm.test_spec_decode import NGRAM

    params = [SamplingParams(temperature=0, max_tokens=12 + 3 * (i % 3), ignore_eos=True, detokenize=False)
              for i in range(len(REPEATING))] * 2
    prompts = REPEATING * 2  # 12 requests: more than one column's 8 slots
    kw = dict(model=wide_llama, skip_tokenizer_init=True, max_num_seqs=10, max_model_len=256, block_size=32,
              seed=0, num_gpu_blocks_override=TEST_KV_BLOCKS, additional_config=tt_options("reference"))
    engine = LLM(**kw)
    try:
        single = [list(o.outputs[0].token_ids) for o in engine.generate(prompts, params)]
    finally:
        shutdown(engine)
    monkeypatch.setenv("MESH_DEVICE", "(2, 4)")
    engine = LLM(**kw, disable_log_stats=False, speculative_config=NGRAM)
    try:
        assert "mesh=(2, 4)" in repr(engine)
        spec = [list(o.outputs[0].token_ids) for o in engine.generate(prompts, params)]
        accepted = spec_counts(engine)[1]
    finally:
        shutdown(engine)
    assert spec == single
    assert accepted > 0
    # The wide model as its own draft there: a draft model's passes and cache follow the same columns; every
    # draft is accepted only if each column's draft cache holds its users' K/V.
    engine = LLM(**kw, disable_log_stats=False,
                 speculative_config={"model": wide_llama, "num_speculative_tokens": 3})
    try:
        drafted = [list(o.outputs[0].token_ids) for o in engine.generate(prompts, params)]
        drafts, accepted = spec_counts(engine)
    finally:
        shutdown(engine)
    assert drafted == single
    assert drafts > 0 and accepted == drafts, (accepted, drafts)
    # The engine core refuses it as it loads the model; the front end reports the core's failure.
    capfd.readouterr()
    with pytest.raises(RuntimeError, match="Engine core initialization failed"):
        LLM(**dict(kw, max_num_seqs=4), speculative_config=dict(NGRAM, num_speculative_tokens=8))
    assert "num_speculative_tokens=8: on this 2-D mesh each chip column decodes 8 users" in capfd.readouterr().err
