"""A slice of the speculative-decoding matrix (scripts/spec_matrix.py: every tiny family x profile): the tiny Gemma 3
on `reference`, whose sliding-window layers put vLLM's hybrid KV cache under the verify step. Greedy tokens with
n-gram drafts equal the plain engine's at batch 1, at batch 32 with a chunked prompt, and on a prefix-cache hit;
drafts were proposed and some accepted."""

from tests.vllm.spec_matrix import run


def test_gemma3_reference_greedy_equals_the_plain_engine(tmp_path):
    cell = run("gemma3", "reference", tmp_path)
    assert cell["equal"] == {"batch 1": True, "batch 32 (chunked)": True, "prefix hit": True}, cell
    assert cell["drafts"] > 0 and cell["accepted_tokens"] > 0 and cell["prefix_hit_tokens"] >= 256, cell


def test_gemma3_as_its_own_draft_under_the_hybrid_kv_cache(tmp_path):
    """A draft model when the target has sliding-window layers: vLLM's hybrid KV cache gives those layers their own
    block tables, whose blocks behind the window go back to the pool; the draft's cache follows the full-attention
    group's table (asserted: a sliding group's table gave the same tokens here, its freed blocks not yet reused),
    and the draft's own sliding-window layers apply their window in attention. The tiny Gemma 3 drafting for
    itself: the plain engine's tokens in every batch (a prefix hit included), and every draft accepted, which holds
    only if the draft's cache holds exactly the target's K/V."""
    cell = run("gemma3", "reference", tmp_path, self_draft=True)
    assert cell["equal"] == {"batch 1": True, "batch 32 (chunked)": True, "prefix hit": True}, cell
    assert cell["draft_tokens"] > 0 and cell["accepted_tokens"] == cell["draft_tokens"], cell
    assert cell["prefix_hit_tokens"] >= 256, cell
    assert cell["draft_table_kind"] == "FullAttentionSpec", cell
