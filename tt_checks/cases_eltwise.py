"""Hand-written corpus cases: eltwise ops (see tt_checks/corpus_cases.py for the encoding helpers)."""

from __future__ import annotations

from collections.abc import Iterator


def cases() -> Iterator[tuple[str, dict]]:
    yield from ()
