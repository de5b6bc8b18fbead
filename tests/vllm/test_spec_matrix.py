"""A slice of the speculative-decoding matrix (scripts/spec_matrix.py: every tiny family x profile): the tiny Gemma 3
on `reference`, whose sliding-window layers put vLLM's hybrid KV cache under the verify step. Greedy tokens with
n-gram drafts equal the plain engine's at batch 1, at batch 32 with a chunked prompt, and on a prefix-cache hit;
drafts were proposed and some accepted."""

from tests.vllm.spec_matrix import run


def test_gemma3_reference_greedy_equals_the_plain_engine(tmp_path):
    cell = run("gemma3", "reference", tmp_path)
    assert cell["equal"] == {"batch 1": True, "batch 32 (chunked)": True, "prefix hit": True}, cell
    assert cell["drafts"] > 0 and cell["accepted_tokens"] > 0 and cell["prefix_hit_tokens"] >= 256, cell
