"""Which data-parallel replica holds each KV block's contents.

With data parallel (tt.data_parallel) every replica's cache has every block id, but a block's K/V are written only
on the replica of the request that computed them. vLLM's prefix cache is global: it may hand a request placed on
replica B the cached blocks replica A computed, which B's cache holds stale. The runner keeps, per block id, the
replica that last wrote it, and a request whose cached prefix is not all on its own replica recomputes that prefix
there (the same blocks, the same values) instead of reading stale K/V.
"""

from __future__ import annotations

from collections.abc import Sequence

NULL_BLOCK = 0  # vLLM's reserved null block: never written, never owned


class BlockOwners:
    def __init__(self) -> None:
        self._owner: dict[tuple[int, int], int] = {}  # (KV-cache group, block id) -> replica

    def mark(self, groups: Sequence[Sequence[int]], replica: int) -> None:
        """The blocks of each group (a request's block ids) now hold K/V written on `replica`."""
        for g, ids in enumerate(groups):
            for b in ids:
                if b != NULL_BLOCK:
                    self._owner[(g, b)] = replica

    def all_on(self, groups: Sequence[Sequence[int]], replica: int) -> bool:
        """Whether every (non-null) block of each group holds K/V written on `replica`."""
        return all(self._owner.get((g, b)) == replica for g, ids in enumerate(groups) for b in ids if b != NULL_BLOCK)
