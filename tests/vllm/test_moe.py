"""A mixture-of-experts model through vLLM's LLM: the tiny Qwen3-MoE (8 experts, 2 per token, a dense layer among
the MoE ones) with chunked prefill (64-token budget: the long prompt in five chunks), prefix caching and sampling on
the device. Greedy tokens are HF's; a prefix-cache hit gives the same tokens; sampled tokens are drawn on the device,
each among HF's top-k at its position, and a seeded request repeats."""

import os

import pytest
import torch
from vllm import LLM, SamplingParams

from tests.models.tiny import load_hf, make_padded_model, make_tiny_model, make_wide_model
from tests.vllm.conftest import check_against_hf, shutdown

BLOCK, BUDGET, STEPS = 32, 64, 24
_g = torch.Generator().manual_seed(4)
PROMPTS = [torch.randint(2, 512, (n,), generator=_g).tolist() for n in (290, 70, 20)]
GREEDY = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True)


def _runner(engine, attr):
    return engine.collective_rpc(lambda worker: getattr(worker.model_runner, attr))[0]


@pytest.fixture(scope="module")
def moe_dir(tmp_path_factory):
    return str(make_tiny_model("qwen3_moe", tmp_path_factory.mktemp("moe_models")))


@pytest.fixture(scope="module")
def engine(moe_dir):
    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc of a lambda reading the runner
    llm = LLM(model=moe_dir, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=512, block_size=BLOCK, seed=0,
              max_num_batched_tokens=BUDGET, enable_prefix_caching=True, num_gpu_blocks_override=64,
              additional_config={"tt": {"optimizations": "reference", "sample_on_device_mode": "decode_only"}})
    yield llm
    shutdown(llm)


def test_greedy_is_hfs_through_chunked_prefill_and_a_prefix_hit(engine, moe_dir):
    hf = load_hf(moe_dir)
    outs = engine.generate([{"prompt_token_ids": p} for p in PROMPTS], GREEDY)
    for p, out in zip(PROMPTS, outs, strict=True):
        assert len(out.outputs[0].token_ids) == STEPS
        check_against_hf(hf, p, out.outputs[0].token_ids)
    again = engine.generate([{"prompt_token_ids": PROMPTS[0]}], GREEDY)[0]
    assert (again.num_cached_tokens or 0) >= 256, again.num_cached_tokens
    assert list(again.outputs[0].token_ids) == list(outs[0].outputs[0].token_ids)


def test_sampled_tokens_are_drawn_on_the_device_among_hfs_top_k(engine, moe_dir):
    hf = load_hf(moe_dir)
    params = SamplingParams(temperature=1.0, top_k=4, seed=7, max_tokens=STEPS, ignore_eos=True)
    before = _runner(engine, "device_sampled_steps")
    outs = engine.generate([{"prompt_token_ids": p} for p in PROMPTS[1:]], params)
    assert _runner(engine, "device_sampled_steps") - before >= STEPS - 1
    greedy_like = 0
    for out in outs:
        ids = list(out.prompt_token_ids) + list(out.outputs[0].token_ids)
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0]
        start = len(out.prompt_token_ids)
        for pos, tok in enumerate(out.outputs[0].token_ids):
            best = logits[start + pos - 1].topk(4).indices.tolist()
            assert tok in best, (pos, tok, best)
            greedy_like += tok == best[0]
    assert greedy_like < 2 * STEPS  # drawn from the 4 candidates, not always the top one
    again = engine.generate([{"prompt_token_ids": p} for p in PROMPTS[1:]], params)
    assert [o.outputs[0].token_ids for o in again] == [o.outputs[0].token_ids for o in outs]


@pytest.mark.parametrize(("family", "dispatch", "make"), [("qwen3_moe", "reduce", make_wide_model),
                                                          ("gpt_oss", "reduce", make_wide_model),
                                                          ("qwen3_moe", "all_to_all", make_wide_model),
                                                          ("gpt_oss", "reduce", make_padded_model),
                                                          ("qwen2_moe", "reduce", make_wide_model),
                                                          ("glm4_moe", "reduce", make_wide_model)],
                         ids=["qwen3_moe", "gpt_oss", "qwen3_moe-all_to_all", "gpt_oss-padded", "qwen2_moe",
                              "glm4_moe"])
def test_experts_split_over_a_t3k_give_hfs_greedy_tokens(family, dispatch, make, tmp_path_factory, monkeypatch):
    """MESH_DEVICE=T3K: the widened tiny Qwen3-MoE or GPT-OSS (8 heads, 8 experts) with one expert per chip and
    attention tensor parallel (GPT-OSS: each chip its head's sink); greedy tokens (reference profile) are HF's, as
    the single-device engines' are above (Qwen3-MoE: the same tiny model's, so the two are equal, token for token,
    short of a logged near-tie; GPT-OSS: the 4-head tiny model's). all_to_all: additional_config
    tt.expert_dispatch reaches the MoE layers (tokens dispatched to their experts' chips). padded: hidden 480, which
    8 chips do not split into whole tiles (gpt-oss-20b's 2880 in miniature): the residual padded to 512. qwen2_moe:
    the shared expert's 192 units over the 8 chips (24 each, padded to a tile), beside the routed experts. glm4_moe:
    GLM-4.5's sigmoid routing with its correction bias, a dense first layer, the ungated shared expert's 64 units
    (padded to a tile per chip) and RoPE on half of each head."""
    path = str(make(family, tmp_path_factory.mktemp("moe_wide")))
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    monkeypatch.setenv("MESH_DEVICE", "T3K")
    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc of a lambda reading the model
    llm = LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=256, block_size=BLOCK, seed=0,
              num_gpu_blocks_override=32,
              additional_config={"tt": {"optimizations": "reference", "expert_dispatch": dispatch}})
    try:
        assert "mesh=(1, 8)" in repr(llm), repr(llm)
        used = llm.collective_rpc(lambda w: [getattr(layer.mlp, "all_to_all", None)
                                             for layer in w.model_runner.model.model.layers])[0]
        assert all(u == (dispatch == "all_to_all") for u in used if u is not None) and any(u is not None for u in used)
        pad = llm.collective_rpc(lambda w: w.model_runner.model.model.plan.dim_pad)[0]
        assert pad == (32 if make is make_padded_model else 0)
        outs = llm.generate([{"prompt_token_ids": p[:60]} for p in PROMPTS], params)
    finally:
        shutdown(llm)
    hf = load_hf(path)
    for p, out in zip(PROMPTS, outs, strict=True):
        assert len(out.outputs[0].token_ids) == 12
        check_against_hf(hf, p[:60], out.outputs[0].token_ids)


def test_gpt_oss_greedy_is_hfs_through_chunked_prefill_and_a_prefix_hit(tmp_path_factory):
    """The tiny GPT-OSS through vLLM with chunked prefill (64-token budget: the 290-token prompt in five chunks) and
    prefix caching, its sinks made large enough to matter (tests/models/test_moe.py: HF without them is PCC 0.95
    away), so every chunk after the first and the prefix hit go through chunked SDPA with the sinks: greedy tokens
    are HF's (reference profile), and the cached prompt gives the same tokens again."""
    from tests.models.test_moe import LARGE_SINKS, _with_sinks

    root = tmp_path_factory.mktemp("gpt_oss_models")
    path = str(_with_sinks(make_tiny_model("gpt_oss", root), root / "gpt_oss_large_sinks", LARGE_SINKS))
    _greedy_through_chunks_and_a_prefix_hit(path, {"optimizations": "reference"})


def _greedy_through_chunks_and_a_prefix_hit(path: str, tt: dict, then: SamplingParams | None = None):
    """PROMPTS through vLLM with chunked prefill (BUDGET tokens a step) and prefix caching: greedy tokens HF's, the
    first prompt again (its cached prefix) the same tokens. Returns the output of PROMPTS[1] with `then`."""
    llm = LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=512, block_size=BLOCK, seed=0,
              max_num_batched_tokens=BUDGET, enable_prefix_caching=True, num_gpu_blocks_override=64,
              additional_config={"tt": tt})
    try:
        outs = llm.generate([{"prompt_token_ids": p} for p in PROMPTS], GREEDY)
        again = llm.generate([{"prompt_token_ids": PROMPTS[0]}], GREEDY)[0]
        extra = llm.generate([{"prompt_token_ids": PROMPTS[1]}], then)[0] if then is not None else None
    finally:
        shutdown(llm)
    hf = load_hf(path)
    for p, out in zip(PROMPTS, outs, strict=True):
        assert len(out.outputs[0].token_ids) == STEPS
        check_against_hf(hf, p, out.outputs[0].token_ids)
    assert (again.num_cached_tokens or 0) >= 256, again.num_cached_tokens
    assert list(again.outputs[0].token_ids) == list(outs[0].outputs[0].token_ids)
    return hf, extra


def test_gpt_oss_through_vllm_serve_gives_hfs_greedy_tokens(tmp_path):
    """`vllm serve` of the tiny GPT-OSS (sinks that matter) with chunked prefill (64-token budget) and prefix
    caching, no tokenizer (token-id prompts, token ids back): each completion's greedy tokens are HF's, and the long
    prompt again (a prefix-cache hit) gives the same tokens."""
    import json

    from tests.models.test_moe import LARGE_SINKS, _with_sinks
    from tests.vllm.conftest import vllm_serve

    path = str(_with_sinks(make_tiny_model("gpt_oss", tmp_path / "tiny"), tmp_path / "gpt_oss_large_sinks",
                           LARGE_SINKS))
    log = tmp_path / "serve.log"
    flags = ["--skip-tokenizer-init", "--max-num-seqs", "4", "--max-model-len", "512", "--block-size", str(BLOCK),
             "--max-num-batched-tokens", str(BUDGET), "--enable-prefix-caching", "--num-gpu-blocks-override", "64",
             "--enable-prompt-tokens-details",
             "--additional-config", json.dumps({"tt": {"optimizations": "reference"}})]
    with vllm_serve(path, *flags, log=log) as (client, _):
        def complete(prompt: list[int]) -> tuple[list[int], int]:
            out = client.completions.create(model=path, prompt=prompt, max_tokens=12, temperature=0.0,
                                            extra_body={"return_token_ids": True})
            details = out.usage.prompt_tokens_details
            return list(out.choices[0].model_extra["token_ids"]), (details.cached_tokens or 0) if details else 0

        got = [complete(p)[0] for p in PROMPTS]
        again, cached = complete(PROMPTS[0])
    hf = load_hf(path)
    for p, toks in zip(PROMPTS, got, strict=True):
        assert len(toks) == 12
        check_against_hf(hf, p, toks)
    assert cached >= 256, cached
    assert again == got[0]


def test_deepseek_v3_greedy_is_hfs_through_chunked_prefill_and_a_prefix_hit(tmp_path_factory):
    """The tiny DeepSeek-V3 (multi-latent attention: one latent cache per layer; its router) through vLLM with chunked
    prefill (64-token budget: the 290-token prompt in five chunks, all but the first through the chunked MLA prefill
    over the paged latent cache) and prefix caching: greedy tokens are HF's (reference profile), the cached prompt
    gives the same tokens again; then sampling on the device draws among HF's top k."""
    path = str(make_tiny_model("deepseek_v3", tmp_path_factory.mktemp("deepseek_models")))
    params = SamplingParams(temperature=1.0, top_k=4, seed=7, max_tokens=STEPS, ignore_eos=True)
    hf, sampled = _greedy_through_chunks_and_a_prefix_hit(
        path, {"optimizations": "reference", "sample_on_device_mode": "decode_only"}, then=params)
    ids = list(sampled.prompt_token_ids) + list(sampled.outputs[0].token_ids)
    with torch.no_grad():
        logits = hf(torch.tensor([ids])).logits[0]
    start = len(sampled.prompt_token_ids)
    picks = [logits[start + i - 1].topk(4).indices.tolist() for i in range(STEPS)]
    assert all(t in best for t, best in zip(sampled.outputs[0].token_ids, picks, strict=True))
    assert sum(t == best[0] for t, best in zip(sampled.outputs[0].token_ids, picks, strict=True)) < STEPS
