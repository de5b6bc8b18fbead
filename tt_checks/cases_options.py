"""Hand-written corpus cases: options of the decode attention and head ops beyond what the models use (attention
sinks, masks and non-causal paged decode; separate KV input and sharded inputs to nlp_create_qkv_heads)."""

from __future__ import annotations

from collections.abc import Iterator


def cases() -> Iterator[tuple[str, dict]]:
    yield from ()
