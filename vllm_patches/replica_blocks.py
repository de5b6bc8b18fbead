"""vLLM's KV block pool split among data-parallel replicas (tt.data_parallel = N).

Each replica's device holds its own cache of B blocks, and vLLM's scheduler sees one pool of N * B ids: ids
r * B .. (r + 1) * B - 1 are replica r's cache (tt_models/data_parallel.py translates them to its local blocks). A
request lives on one replica while it holds blocks:
- the scheduler places it when it first asks for blocks: on the replica with the fewest requests holding blocks, then
  the one where more of its prefix is cached, then the one with more free blocks;
- every block it gets comes from that replica's share, and prefix-cache hits are taken only from there (another
  replica's cached copy is not in this replica's DRAM);
- when its replica's share runs out, the request preempted to make room is the newest one on that replica
  (preempting one elsewhere frees nothing here);
- the runner reads the replica off the request's block ids and gives it a decode slot there.
So each replica's users have its whole cache; with one id space on every replica (the alternative vLLM's single pool
suggests) the replicas' users would share one replica's worth of blocks.

Each replica's first block (local 0) is left out of the pool: vLLM's null block (id 0) and page-table padding map to
it on every replica.

The pieces are vLLM's own: its BlockPool keeps everything but the free queue, which becomes one queue per replica
behind the same interface (whose free count is the placing request's replica's while it allocates, the whole pool's
otherwise, for vLLM's usage metrics), and its KVCacheManager's allocation calls are wrapped to say which replica is
allocating.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from vllm.v1.core.kv_cache_utils import FreeKVCacheBlockQueue, KVCacheBlock, make_block_hash_with_group_id


class ReplicaFreeQueues:
    """vLLM's FreeKVCacheBlockQueue interface over one queue per replica: blocks go back to their own replica's
    queue; new blocks come from the queue of the replica allocating (`current`)."""

    def __init__(self, blocks: list[KVCacheBlock], replicas: int, per: int) -> None:
        self.per = per
        self.queues = [FreeKVCacheBlockQueue(blocks[r * per + 1:(r + 1) * per]) for r in range(replicas)]
        # Never handed out: each replica's block 0 (vLLM's null block is replica 0's) and the ids beyond N * per.
        # Counted as free in the whole pool's count, as vLLM counts everything but its null block, so that its
        # usage reads 0 when idle and reset_prefix_cache finds nothing held.
        self.unused = len(blocks) - replicas * (per - 1) - 1
        self.current: int | None = None
        self.last: int | None = None  # the replica of the latest allocation: whose request a victim must be

    def replica(self, block: KVCacheBlock) -> int:
        return block.block_id // self.per

    def _mine(self) -> FreeKVCacheBlockQueue:
        if self.current is None:
            raise RuntimeError("a KV block was taken outside an allocation for a placed request")
        return self.queues[self.current]

    def free_on(self, r: int) -> int:
        return self.queues[r].num_free_blocks

    @property
    def num_free_blocks(self) -> int:
        if self.current is None:
            return sum(q.num_free_blocks for q in self.queues) + self.unused
        return self.queues[self.current].num_free_blocks

    def popleft(self) -> KVCacheBlock:
        return self._mine().popleft()

    def popleft_n(self, n: int) -> list[KVCacheBlock]:
        return self._mine().popleft_n(n)

    def remove(self, block: KVCacheBlock) -> None:
        self.queues[self.replica(block)].remove(block)

    def append(self, block: KVCacheBlock) -> None:
        self.queues[self.replica(block)].append(block)

    def _by_replica(self, blocks: Iterable[KVCacheBlock]) -> dict[int, list[KVCacheBlock]]:
        out: dict[int, list[KVCacheBlock]] = {}
        for b in blocks:
            out.setdefault(self.replica(b), []).append(b)
        return out

    def prepend_n(self, blocks: list[KVCacheBlock]) -> None:
        for r, bs in self._by_replica(blocks).items():
            self.queues[r].prepend_n(bs)

    def append_n(self, blocks: list[KVCacheBlock]) -> None:
        for r, bs in self._by_replica(blocks).items():
            self.queues[r].append_n(bs)

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        return [b for q in self.queues for b in q.get_all_free_blocks()]

    def iter_blocks_after(self, block: KVCacheBlock, *args: Any, **kwargs: Any) -> Iterator[KVCacheBlock]:
        return self.queues[self.replica(block)].iter_blocks_after(block, *args, **kwargs)


class ReplicaBlocks:
    """Installed on a TTScheduler whose engine runs tt.data_parallel replicas."""

    def __init__(self, scheduler: Any, replicas: int, max_num_seqs: int) -> None:
        manager = scheduler.kv_cache_manager
        pool = manager.block_pool
        self.replicas, self.slots = replicas, max_num_seqs // replicas
        self.per = pool.num_gpu_blocks // replicas
        self.manager, self.pool = manager, pool
        self.queues = ReplicaFreeQueues(pool.blocks, replicas, self.per)
        pool.free_block_queue = self.queues
        self.replica_of: dict[str, int] = {}
        lookup = pool.cached_block_hash_to_block

        def get_cached_block(block_hash: Any, kv_cache_group_ids: list[int]) -> list[KVCacheBlock] | None:
            # A hit counts only on the allocating request's replica: vLLM keeps every block cached under a hash
            # (one per replica that computed it), so take the one there.
            r = self.queues.current
            found = []
            for group_id in kv_cache_group_ids:
                held = lookup._cache.get(make_block_hash_with_group_id(block_hash, group_id))
                held = [held] if isinstance(held, KVCacheBlock) else list((held or {}).values())
                mine = [b for b in held if r is None or self.queues.replica(b) == r]
                if not mine:
                    return None
                found.append(mine[0])
            return found

        pool.get_cached_block = get_cached_block
        for name in ("get_computed_blocks", "allocate_slots"):
            setattr(manager, name, self._placed(getattr(manager, name)))

    def _holds_blocks(self, req_id: str) -> bool:
        return any(b.block_id for blocks in self.manager.coordinator.get_blocks(req_id) for b in blocks)

    def place(self, request: Any) -> int:
        """The request's replica: where it was placed (it holds blocks there, or was placed earlier in this
        schedule() call, between vLLM's prefix lookup and its allocation); else where the fewest requests hold
        blocks (load first, as vLLM's own data-parallel balancing), then where more of its prefix is cached, then
        where more blocks are free."""
        rid = request.request_id
        if rid in self.replica_of:
            return self.replica_of[rid]
        holding = [0] * self.replicas
        for other, r in self.replica_of.items():
            holding[r] += self._holds_blocks(other)
        fewest = [i for i in range(self.replicas) if holding[i] == min(holding)]
        r = max(fewest, key=lambda i: (self._hit(request, i), self.queues.free_on(i), -i))
        self.replica_of[rid] = r
        return r

    def new_step(self) -> None:
        """Before each schedule() call: requests holding no blocks (finished, preempted, or not admitted) are
        placed afresh when they next ask for blocks."""
        self.replica_of = {rid: r for rid, r in self.replica_of.items() if self._holds_blocks(rid)}

    def _hit(self, request: Any, r: int) -> int:
        """Tokens of the request's prefix cached on replica r."""
        if not self.manager.prefix_cache_lookup_enabled(request):
            return 0
        self.queues.current = r
        try:
            return self.manager.coordinator.find_longest_cache_hit(request.block_hashes, request.num_tokens - 1)[1]
        finally:
            self.queues.current = None

    def _placed(self, call: Callable) -> Callable:
        def run(request: Any, *args: Any, **kwargs: Any) -> Any:
            self.queues.current = self.queues.last = self.place(request)
            try:
                return call(request, *args, **kwargs)
            finally:
                self.queues.current = None

        return run

    def victims_last(self, running: list) -> list:
        """`running` for one schedule() call, with vLLM's preemption victim (its last element) the newest request
        on the replica that is allocating."""
        return _VictimOrder(running, self)


class _VictimOrder(list):
    """vLLM's running list as its scheduler reads it while allocating: `running[-1]` and `running.pop()` (the FCFS
    preemption victim) are the newest request on the allocating replica, which sits at or after the request being
    scheduled, so no request already scheduled this step is taken."""

    def __init__(self, items: Iterable, owner: ReplicaBlocks) -> None:
        super().__init__(items)
        self._owner = owner

    def _victim(self) -> int:
        r = self._owner.queues.last
        if r is not None:
            for i in range(len(self) - 1, -1, -1):
                if self._owner.replica_of.get(self[i].request_id) == r:
                    return i
        return len(self) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int) and i == -1:
            return super().__getitem__(self._victim())
        return super().__getitem__(i)

    def pop(self, i: int = -1) -> Any:
        return super().pop(self._victim() if i == -1 else i)
