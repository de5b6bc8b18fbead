"""Data parallel over submeshes: tt_data_parallel replicas of one model, each on its own submesh with its own KV
cache, decoding an equal share of the users.

User slots are global (0 .. max_batch_size - 1); slot s lives on replica s // per_replica for its whole life, since
its KV pages are in that replica's cache. Block ids are split among the replicas: of `num_blocks` (the
allocate_kv_cache shape's first dimension), replica r's cache holds ids r * B .. (r + 1) * B - 1 with B = num_blocks
// N, as its local blocks 0 .. B - 1, so each replica's DRAM serves only its own users' blocks (every replica holding
every id would leave each about 1/N of its DRAM). A replica's local block 0 is never a user's: id 0 (vLLM's null
block, page-table padding) maps to it on every replica. Page tables carry the global ids; each replica's rows are
translated to its local ids, and an id outside the row's replica is refused. Decode inputs (padded to
max_batch_size) are split into per-replica row ranges and the outputs put back in slot order; prefill rows go to the
replica of their empty slot. A decode step launches every replica's traced step before reading any result back, so
the replicas' devices run at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from tt_models.sampling import TTSamplingParams


def _split_params(params: TTSamplingParams | None, lo: int, hi: int) -> TTSamplingParams | None:
    """A replica's share of per-user sampling lists (single values apply to everyone)."""
    if params is None:
        return None
    cut = {k: v[lo:hi] for k, v in params.__dict__.items() if isinstance(v, (list, tuple))}
    return replace(params, **cut)


def _cat(parts: list[Any]) -> Any:
    """The replicas' results in user order: token ids or logits, or (ids, logprobs dict) from on-device penalties
    and logprobs."""
    if isinstance(parts[0], tuple):
        return torch.cat([p[0] for p in parts]), {k: torch.cat([p[1][k] for p in parts]) for k in parts[0][1]}
    return torch.cat(parts)


@dataclass
class DataParallel:
    """Holds the replicas (generation-class instances, one per submesh) and speaks the same contract."""

    replicas: list[Any]
    _kv_views: dict[int, list] = field(default_factory=dict)
    blocks_per_replica: int = 0  # B: set by allocate_kv_cache

    def modules(self) -> Iterator[Any]:
        """No torch modules, as a single replica's generation class (vLLM's in-process engine walks them)."""
        return iter(())

    @property
    def per_replica(self) -> int:
        return self.replicas[0].max_batch_size

    @property
    def max_batch_size(self) -> int:
        return self.per_replica * len(self.replicas)

    @property
    def verify_rows(self) -> int:
        """Rows of a speculative verify step: each replica's verify rows in turn (replica r's are rows
        r * R .. (r + 1) * R - 1, R = one replica's), so a request's rows go to the replica holding its KV."""
        return self.replicas[0].verify_rows * len(self.replicas)

    @property
    def verify_groups(self) -> int:
        """Each replica's verify row ranges in turn (Generator.verify_groups)."""
        return self.replicas[0].verify_groups * len(self.replicas)

    def verify_group(self, slot: int) -> int:
        r, local = divmod(slot, self.per_replica)
        return r * self.replicas[0].verify_groups + self.replicas[0].verify_group(local)

    @property
    def max_seq_len(self) -> int:
        return self.replicas[0].max_seq_len

    @property
    def model(self) -> Any:
        return self.replicas[0].model

    @property
    def kv_cache_heads(self) -> int:
        return self.replicas[0].kv_cache_heads

    @property
    def model_capabilities(self) -> dict:
        return self.replicas[0].model_capabilities

    def __repr__(self) -> str:
        return f"DataParallel({len(self.replicas)} x {self.replicas[0]!r})"

    def _kv(self, kv_cache: list, r: int) -> list:
        # A replica sees its cache as a one-replica cache; the view is kept so a decode trace keyed on the cache
        # object is captured once per replica, not per call.
        layers = kv_cache[r]
        view = self._kv_views.get(id(layers))
        if view is None or view[0] is not layers:
            view = self._kv_views[id(layers)] = [layers]
        return view

    # ---------------- the contract ----------------
    def get_max_tokens_all_users(self, *args: Any, **kwargs: Any) -> int:
        return self.replicas[0].get_max_tokens_all_users(*args, **kwargs)

    def kv_cache_capacity(self, block_size: int, cache_layers: int | None = None, draft: Any = None) -> Any:
        """One replica's capacity (the smallest replica's): the blocks each replica's cache can hold. The pool over
        all replicas is that many times the replica count (allocate_kv_cache). draft: a speculative-decoding
        draft model of the same replicas, whose replica r's cache takes each of replica r's block ids too."""
        caps = [r.kv_cache_capacity(block_size, cache_layers, **({} if draft is None else {"draft": d}))
                for r, d in zip(self.replicas, draft.replicas if draft is not None else self.replicas, strict=True)]
        return min(caps, key=lambda c: c.blocks)

    def allocate_kv_cache(self, kv_cache_shape: tuple, dtype: torch.dtype, num_layers: int,
                          layer_groups: Sequence[int] | None = None) -> list:
        """kv_cache[replica][layer] = [K, V] on that replica's submesh, each of kv_cache_shape[0] // N blocks (the
        replica's share of the block ids)."""
        per = kv_cache_shape[0] // len(self.replicas)
        if per < 2:
            raise ValueError(f"{kv_cache_shape[0]} KV blocks over {len(self.replicas)} data-parallel replicas: "
                             f"each replica needs at least 2 (its block 0 is never a user's)")
        self.blocks_per_replica = per
        shape = (per, *kv_cache_shape[1:])
        return [r.allocate_kv_cache(shape, dtype, num_layers, layer_groups)[0] for r in self.replicas]

    def _local(self, page_table: torch.Tensor, r: int, slots: Sequence[int]) -> torch.Tensor:
        """Replica r's rows of a page table in its local block ids (slots: the global slot of each row, for the
        error)."""
        per = self.blocks_per_replica
        if not per:
            raise RuntimeError("allocate_kv_cache must run before prefill or decode")
        local = page_table - r * per
        bad = (page_table != 0) & ((local < 1) | (local >= per))
        if bool(bad.any()):
            row = int(bad.nonzero()[0, -2])
            raise ValueError(f"page table row for slot {slots[row]} (replica {r}) names block ids outside replica "
                             f"{r}'s ids {r * per + 1}..{(r + 1) * per - 1}: "
                             f"{sorted(set(page_table[bad].tolist()))[:8]}")
        return torch.where(page_table == 0, torch.zeros_like(local), local)

    def page_table_shape(self, users: int, width: int) -> tuple[int, ...]:
        return self.replicas[0].page_table_shape(users, width)

    def prefill_forward(self, tokens: torch.Tensor, page_table: torch.Tensor, kv_cache: list, prompt_lens: Any,
                        sampling_params: TTSamplingParams | None = None, empty_slots: Any = None,
                        start_pos: Any = None, **kw: Any) -> torch.Tensor:
        n = tokens.shape[0]
        slots = [int(s) for s in empty_slots] if empty_slots is not None else list(range(n))
        if len(slots) != n:
            raise ValueError(f"empty_slots names {len(slots)} slots for {n} prompts")
        bad = [s for s in slots if not 0 <= s < self.max_batch_size]
        if bad:
            raise ValueError(f"empty_slots {bad} outside 0..{self.max_batch_size - 1}")
        lens = [int(x) for x in prompt_lens]
        starts = [int(x) for x in start_pos] if start_pos is not None else None
        wanted = kw.pop("return_prompt_logits", None)
        out: list[Any] = [None] * n
        every: list[Any] = [None] * n
        for r, replica in enumerate(self.replicas):
            rows = [i for i, s in enumerate(slots) if s // self.per_replica == r]
            if not rows:
                continue
            res = replica.prefill_forward(
                tokens[rows], self._local(page_table[..., rows, :], r, [slots[i] for i in rows]),
                self._kv(kv_cache, r), [lens[i] for i in rows],
                sampling_params=sampling_params, empty_slots=[slots[i] % self.per_replica for i in rows],
                start_pos=[starts[i] for i in rows] if starts is not None else None,
                return_prompt_logits=[wanted[i] for i in rows] if wanted is not None else None, **kw)
            if wanted is not None:
                res, res_every = res
                for j, i in enumerate(rows):
                    every[i] = res_every[j]
            for j, i in enumerate(rows):
                out[i] = res[j]
        return (torch.stack(out), every) if wanted is not None else torch.stack(out)

    def decode_forward(self, tokens: torch.Tensor, start_pos: torch.Tensor, page_table: torch.Tensor,
                       kv_cache: list, enable_trace: bool = True, read_from_device: bool = True,
                       sampling_params: TTSamplingParams | None = None, **kw: Any) -> Any:
        # A verify step (writes > 1) fills each replica's verify rows; a decode step its users.
        verify = kw.get("writes", 1) > 1
        rows = self.verify_rows if verify else self.max_batch_size
        if tokens.shape[0] != rows:
            raise ValueError(f"decode batch must be padded to {'verify_rows' if verify else 'max_batch_size'} "
                             f"{rows}, got {tokens.shape[0]}")
        per = rows // len(self.replicas)
        # Every replica's step is launched before any result is read: a read waits for its replica's device, so
        # reading replica r before launching r + 1 would run the replicas one after another.
        outs = []
        for r, replica in enumerate(self.replicas):
            lo, hi = r * per, (r + 1) * per
            share = dict(kw, write_group=kw["write_group"][lo:hi]) if verify else kw
            outs.append(replica.decode_forward(tokens[lo:hi], start_pos[lo:hi],
                                               self._local(page_table[..., lo:hi, :], r, range(lo, hi)),
                                               self._kv(kv_cache, r), enable_trace, False,
                                               _split_params(sampling_params, lo, hi), **share))
        return self.process_decode_output_host(*self.read_decode_output(outs)) if read_from_device else outs

    def read_decode_output(self, tt_out: list, async_read: bool = False) -> tuple[list, bool, int]:
        reads = [r.read_decode_output(o, async_read) for r, o in zip(self.replicas, tt_out, strict=True)]
        return [x[0] for x in reads], reads[0][1], sum(x[2] for x in reads)

    def process_decode_output_host(self, host_out: list, is_tokens: bool = False, users: int | None = None) -> Any:
        # users: the replicas' rows together (read_decode_output's sum), each replica's share of them its own.
        each = None if users is None else users // len(self.replicas)
        parts = [r.process_decode_output_host(h, is_tokens, each)
                 for r, h in zip(self.replicas, host_out, strict=True)]
        out = _cat(parts)
        if users is None:
            return out
        return (out[0][:users], {k: v[:users] for k, v in out[1].items()}) if isinstance(out, tuple) else out[:users]

    def warmup_model_prefill(self, kv_cache: list, enable_trace: bool, sampling_params: Any = None) -> None:
        for r, replica in enumerate(self.replicas):
            replica.warmup_model_prefill(self._kv(kv_cache, r), enable_trace, sampling_params)

    def warmup_model_decode(self, kv_cache: list, enable_trace: bool, max_batch_size: int, num_blocks: int,
                            sampling_params: Any = None, **kw: Any) -> None:
        if max_batch_size != self.max_batch_size:
            raise ValueError(f"warmup at batch {max_batch_size}, but the replicas decode {self.max_batch_size}")
        for r, replica in enumerate(self.replicas):
            lo, hi = r * self.per_replica, (r + 1) * self.per_replica
            shares = None if sampling_params is None else [_split_params(p, lo, hi) for p in sampling_params]
            replica.warmup_model_decode(self._kv(kv_cache, r), enable_trace, self.per_replica,
                                        num_blocks // len(self.replicas), shares, **kw)

    def release(self) -> None:
        for replica in self.replicas:
            replica.release()
