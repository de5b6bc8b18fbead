"""Tensor parallel through stock vLLM: MESH_DEVICE=T3K opens a 1x8 mesh with the 1-D fabric and the model is split
over its 8 chips (each chip caching its share of KV heads: vLLM's KV cache spec is per chip); with data_parallel 2
the same mesh serves two replicas, each tensor parallel over 4 chips; MESH_DEVICE="(2, 4)" alone splits the model two
ways over all 8 chips. Greedy output must equal the single-device engine's token for token.

SmolLM2-135M has 9 attention heads, which split over no even chip count, so the test serves the widened tiny Llama
of tests/models/test_tensor_parallel.py (8 heads, 2 KV heads: replicated on 8 chips) from token ids."""

import pytest
from vllm import LLM, SamplingParams

from tests.models.tiny import make_wide_model
from tests.vllm.conftest import shutdown

PROMPTS = [{"prompt_token_ids": list(range(5 + 40 * i, 30 + 47 * i))} for i in range(3)]


@pytest.fixture(scope="module")
def wide_llama(tmp_path_factory):
    return str(make_wide_model("llama_gqa", tmp_path_factory.mktemp("tp_models")))


def _generate(path: str, **tt) -> tuple[list[list[int]], str]:
    engine = LLM(model=path, skip_tokenizer_init=True, max_num_seqs=4, max_model_len=256, block_size=32, seed=0,
                 additional_config={"tt": {"optimizations": "reference", **tt}})
    try:
        params = [SamplingParams(temperature=0, max_tokens=5 + 3 * i, ignore_eos=True, detokenize=False)
                  for i in range(len(PROMPTS))]
        out = [list(o.outputs[0].token_ids) for o in engine.generate(PROMPTS, params)]
        return out, repr(engine)
    finally:
        shutdown(engine)


@pytest.fixture(scope="module")
def single(wide_llama):
    """Greedy tokens of the single-device engine (MESH_DEVICE unset)."""
    return _generate(wide_llama)[0]


def test_t3k_tensor_parallel_and_tp_x_dp_match_single_device(wide_llama, single, monkeypatch):
    monkeypatch.setenv("MESH_DEVICE", "T3K")
    tp, inspection = _generate(wide_llama)
    assert "mesh=(1, 8)" in inspection and "tensor_parallel=8" in inspection
    assert tp == single
    dp_tp, inspection = _generate(wide_llama, data_parallel=2)
    assert "DataParallel" in inspection and "tensor_parallel=4" in inspection
    assert dp_tp == single


def test_2d_mesh_two_way_tensor_parallel_matches_single_device(wide_llama, single, monkeypatch):
    """MESH_DEVICE="(2, 4)" without data parallel: the model split two ways over all 8 chips (heads over the 2
    rows, the residual over the 4 columns, as tt_transformers on a Galaxy); greedy output equals one chip's."""
    monkeypatch.setenv("MESH_DEVICE", "(2, 4)")
    two_way, inspection = _generate(wide_llama)
    assert "mesh=(2, 4)" in inspection and "tensor_parallel=8 two-way 2x4" in inspection
    assert two_way == single
