"""An offline engine's Prometheus counters, as tests read them (`LLM(disable_log_stats=False)`)."""

from __future__ import annotations

from typing import Any


def counter(engine: Any, name: str) -> int:
    """A counter's total over its label sets."""
    return sum(int(m.value) for m in engine.get_metrics() if m.name == name)


def spec_counts(engine: Any) -> tuple[int, int]:
    """Speculative decoding so far: (draft tokens proposed, draft tokens accepted)."""
    return (counter(engine, "vllm:spec_decode_num_draft_tokens"),
            counter(engine, "vllm:spec_decode_num_accepted_tokens"))
