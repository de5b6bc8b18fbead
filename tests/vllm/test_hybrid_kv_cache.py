"""vLLM's hybrid KV cache on the tiny Gemma 3 (six layers: five with a 48-token sliding window, one global): the
sliding layers get their own block tables and hold only their window's blocks in vLLM's own accounting, the device
holds one K/V tensor pair where the full-KV run holds six, and the tokens are the same as with the hybrid manager
off (every layer keeping the whole context) and HF's, through chunked prefill and a prefix-cache hit."""

import pytest
import torch
from vllm import LLM, SamplingParams

from tests.models.tiny import load_hf, make_tiny_model
from tests.vllm.conftest import check_against_hf, shutdown
from vllm_patches.kv_specs import hybrid_groups

BLOCK = 32
WINDOW = 48  # tests/models/tiny.py "gemma3"
BUDGET = 64  # prefill tokens per step: the long prompt is prefilled in five chunks
STEPS = 24
_g = torch.Generator().manual_seed(3)
PROMPTS = [torch.randint(2, 512, (n,), generator=_g).tolist() for n in (290, 70, 20)]  # the first: 10 blocks
PARAMS = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True, logprobs=3)


def _tokens_and_logprobs(out) -> tuple[list[int], list[dict[int, float]]]:
    o = out.outputs[0]
    return list(o.token_ids), [{t: lp.logprob for t, lp in step.items()} for step in o.logprobs]


def _assert_same(got, want) -> None:
    """Same tokens, and the same top logprobs at every step (the same fp32 arithmetic, on other blocks)."""
    assert got[0] == want[0]
    for step, (a, b) in enumerate(zip(got[1], want[1], strict=True)):
        assert a.keys() == b.keys(), step
        assert all(abs(a[t] - b[t]) <= 1e-5 for t in a), (step, a, b)


@pytest.fixture(scope="module")
def gemma_dir(tmp_path_factory):
    return str(make_tiny_model("gemma3", tmp_path_factory.mktemp("hybrid_models")))


def _engine(path: str, hybrid: bool) -> LLM:
    return LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=512, block_size=BLOCK, seed=0,
               max_num_batched_tokens=BUDGET, enable_prefix_caching=True, num_gpu_blocks_override=96,
               disable_hybrid_kv_cache_manager=not hybrid, additional_config={"tt": {"optimizations": "reference"}})


def _worker_state(engine: LLM) -> dict:
    """What the worker allocated: block tables, each layer's group, distinct K/V tensor pairs on the device."""
    return engine.collective_rpc("kv_cache_layout", timeout=120)[0]


@pytest.fixture(scope="module")
def full_kv(gemma_dir):
    """The hybrid manager off: every layer keeps the whole context in one block table."""
    engine = _engine(gemma_dir, hybrid=False)
    outs = engine.generate([{"prompt_token_ids": p} for p in PROMPTS], PARAMS)
    state = _worker_state(engine)
    shutdown(engine)
    return [_tokens_and_logprobs(o) for o in outs], state


def test_sliding_layers_hold_only_their_window_and_decode_as_with_full_kv(gemma_dir, full_kv, monkeypatch):
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process, scheduler visible
    engine = _engine(gemma_dir, hybrid=True)
    try:
        state = _worker_state(engine)
        # vLLM groups the 5 sliding layers and the global one into six one-layer groups sharing one block pool; the
        # k-th layer of every group shares the k-th tensor pair: one pair on the device instead of six.
        types = load_hf(gemma_dir).config.layer_types
        assert state["groups"] == 6 and sorted(state["layer_groups"]) == list(range(6)), state
        assert state["tensor_pairs"] == 1, state
        assert full_kv[1] == {"groups": 1, "layer_groups": [0] * 6, "tensor_pairs": 6,
                              "draft_table_group": None}, full_kv[1]
        core = engine.llm_engine.engine_core.engine_core
        manager = core.scheduler.kv_cache_manager
        groups = core.scheduler.kv_cache_config.kv_cache_groups
        sliding = [g for g, grp in enumerate(groups) if type(grp.kv_cache_spec).__name__ == "SlidingWindowSpec"]
        full = [g for g in range(len(groups)) if g not in sliding]
        assert len(sliding) == types.count("sliding_attention") == 5 and len(full) == 1
        # tt-describe's capacity answers group the layers as this engine did.
        windows = [WINDOW if t == "sliding_attention" else None for t in types]
        assert hybrid_groups(windows, BLOCK) == [(getattr(g.kv_cache_spec, "sliding_window", None) if i in sliding
                                                  else None, len(g.layer_names)) for i, g in enumerate(groups)]
        null = manager.block_pool.null_block.block_id

        for i, p in enumerate(PROMPTS):
            engine.llm_engine.add_request(str(i), {"prompt_token_ids": p}, PARAMS)
        finished, peak = {}, {}
        while engine.llm_engine.has_unfinished_requests():
            for out in engine.llm_engine.step():
                if out.finished:
                    finished[out.request_id] = _tokens_and_logprobs(out)
            req = next((r for r in core.scheduler.requests.values() if r.prompt_token_ids == PROMPTS[0]), None)
            if req is not None and req.num_computed_tokens > len(PROMPTS[0]) + 8:  # decoding, long past the window
                held = [sum(b != null for b in ids) for ids in manager.get_block_ids(req.request_id)]
                tokens = req.num_computed_tokens
                peak = {"full": max(held[g] for g in full), "sliding": max(held[g] for g in sliding), "at": tokens}
        # The global layer holds every token's block; each sliding layer only the blocks its window (and the up to
        # BLOCK - 1 tokens a chunk may recompute) reaches: the 48-token window spans at most 3 blocks, plus one.
        assert peak["full"] == -(-peak["at"] // BLOCK) >= 10, peak
        assert peak["sliding"] <= -(-(WINDOW - 1 + BLOCK - 1) // BLOCK) + 1 == 4, peak
        hf = load_hf(gemma_dir)
        for i, p in enumerate(PROMPTS):
            _assert_same(finished[str(i)], full_kv[0][i])
            check_against_hf(hf, p, finished[str(i)][0])

        # A prefix-cache hit on the long prompt: the sliding groups need only the window's blocks cached.
        again = engine.generate([{"prompt_token_ids": PROMPTS[0]}], PARAMS)[0]
        assert (again.num_cached_tokens or 0) >= 256, again.num_cached_tokens
        _assert_same(_tokens_and_logprobs(again), full_kv[0][0])
    finally:
        shutdown(engine)
