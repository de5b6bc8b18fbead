"""Greedy output with n-gram speculation against the same engine without it, for a tiny family on a profile: batch
1, then batch 32 with one prompt prefilled in chunks, then that prompt again (a prefix-cache hit) beside a fresh one.
Token for token, with no near-tie excuse: a verify row computes what a decode step at its position computes, bit for
bit (tests/models/test_spec_verify.py), and both engines prefill alike. Used by tests/vllm/test_spec_matrix.py (a
slice) and scripts/spec_matrix.py (every family and profile, JSON report)."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import torch

from tests.models.tiny import make_tiny_model
from tests.vllm.metrics import counter, spec_counts

BLOCK, BUDGET, STEPS = 32, 64, 24
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROFILES = ("reference", "performance")


def prompts() -> tuple[list[int], list[list[int]], list[int]]:
    """A copyable prompt (a random segment repeated, then its start: n-gram drafts copy it), 31 more, and a
    290-token prompt (five chunks of the 64-token budget)."""
    g = torch.Generator().manual_seed(11)

    def copyable() -> list[int]:
        seg = torch.randint(2, 500, (12,), generator=g).tolist()
        return seg * 3 + seg[:5]

    return copyable(), [copyable() for _ in range(31)], torch.randint(2, 500, (290,), generator=g).tolist()


def _engine(path: Path, profile: str, spec: dict | None, blocks: int) -> Any:
    from vllm import LLM

    return LLM(model=str(path), skip_tokenizer_init=True, max_num_seqs=32, max_model_len=512, block_size=BLOCK,
               seed=0, max_num_batched_tokens=BUDGET, enable_prefix_caching=True, num_gpu_blocks_override=blocks,
               disable_log_stats=False, speculative_config=spec, additional_config={"tt": {"optimizations": profile}})


def run(family: str, profile: str, root: Path, self_draft: bool = False, blocks: int = 192) -> dict:
    """One cell: whether every batch's greedy tokens are equal, and the speculative engine's counters. self_draft:
    the model drafts for itself (method 'draft_model') instead of n-gram drafts."""
    from vllm import SamplingParams

    from tests.vllm.conftest import shutdown

    path = make_tiny_model(family, root)
    one, batch, long = prompts()
    fresh = prompts()[1][0][::-1]
    batches = {"batch 1": [one], "batch 32 (chunked)": batch + [long], "prefix hit": [long, fresh]}
    params = SamplingParams(temperature=0, max_tokens=STEPS, ignore_eos=True)
    t0 = time.perf_counter()
    outs: dict[str, dict[str, list[list[int]]]] = {}
    cell: dict[str, Any] = {"family": family, "profile": profile}
    drafts = {"model": str(path), "num_speculative_tokens": NGRAM["num_speculative_tokens"]} if self_draft else NGRAM
    for name, spec in (("plain", None), ("spec", drafts)):
        engine = _engine(path, profile, spec, blocks)
        try:
            outs[name] = {}
            for label, ps in batches.items():
                got = engine.generate([{"prompt_token_ids": p} for p in ps], params)
                outs[name][label] = [list(o.outputs[0].token_ids) for o in got]
                if name == "spec" and label == "prefix hit":
                    cell["prefix_hit_tokens"] = int(got[0].num_cached_tokens or 0)
            if spec and self_draft:  # the kind of KV spec of the layers whose block table the draft follows
                layout, windows = engine.collective_rpc("kv_cache_layout")[0], engine.collective_rpc(
                    "kv_cache_windows")[0]
                group = layout["draft_table_group"]
                cell["draft_table_kind"] = windows["kind"][layout["layer_groups"].index(group)]
            if spec:
                cell["drafts"] = counter(engine, "vllm:spec_decode_num_drafts")
                cell["draft_tokens"], cell["accepted_tokens"] = spec_counts(engine)
        finally:
            shutdown(engine)
            del engine
            gc.collect()
    cell["equal"] = {label: outs["spec"][label] == outs["plain"][label] for label in batches}
    cell["first_difference"] = {
        label: next(((i, j) for i, (a, b) in enumerate(zip(outs["spec"][label], outs["plain"][label], strict=True))
                     for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        for label in batches if not cell["equal"][label]}
    cell["ok"] = all(cell["equal"].values()) and cell["drafts"] > 0 and cell["prefix_hit_tokens"] >= 256
    cell["seconds"] = round(time.perf_counter() - t0, 1)
    return cell
