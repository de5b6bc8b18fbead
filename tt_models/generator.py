"""Host-side orchestration of a Transformer: prefill one user at a time (bucketed, chunked, prefix-aware) and
batched decode with a captured trace replayed on fresh inputs."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.layers.collectives import replicate
from tt_models.layers.logprobs import raw_logprobs, sampled_logprob
from tt_models.layers.penalties import PARAM_NAMES, DevicePenalties
from tt_models.layers.sampling import DeviceSampler
from tt_models.model import TILE, Transformer

logger = logging.getLogger(__name__)


def prefill_bucket(n: int) -> int:
    """TT prefill lengths: 128, then the next power of two up to 2048, then multiples of 2048."""
    if n <= 128:
        return 128
    if n <= 2048:
        return 1 << (n - 1).bit_length()
    return -(-n // 2048) * 2048


@dataclass
class _PendingRead:
    """A decode result being copied to the host, and the event that marks the copy done."""

    tensor: Any
    event: Any


@dataclass
class _DecodeTrace:
    trace_id: int | None
    inputs: list[Any]  # device tensors the trace reads: tokens, current_pos, rot_idxs, page table(s), sampling
    output: Any


@dataclass
class Generator:
    model: Transformer
    mesh_device: Any
    max_batch_size: int
    max_seq_len: int
    max_prefill_chunk: int = 2048
    trace_captures: int = 0
    _traces: dict[tuple, _DecodeTrace] = field(default_factory=dict)
    _sampler: DeviceSampler | None = None
    _penalties: DevicePenalties | None = None
    # Whose token history the device's penalty state holds (the caller's key for its slots' requests), or None
    # when it is stale: after any step that did not update it, and after a capture.
    _history_key: Any = None

    @property
    def verify_rows(self) -> int:
        """Rows of a speculative verify step: every row the device decodes (max_batch_size padded to whole tiles of
        users), so a batch-1 engine verifies k + 1 positions in the rows its decode step leaves empty."""
        return -(-self.max_batch_size // TILE) * TILE

    @property
    def verify_groups(self) -> int:
        """How many equal row ranges the verify rows split into, each decoded by its own chips: a request's rows
        must all sit in its slot's range (verify_group). One, except on a 2-D mesh whose rows share the users out
        by column (chip column c runs users c * U .. (c + 1) * U - 1 and caches only their decode K/V)."""
        return self.verify_rows // self.model.attention_users

    def verify_group(self, slot: int) -> int:
        """The verify row range that runs slot `slot`'s user (its decode row's)."""
        return slot // self.model.attention_users

    # ---------------- prefill ----------------
    def prefill_forward_text(self, tokens: torch.Tensor, page_table: torch.Tensor, kv_cache: list,
                             prompt_lens: Any, start_pos: Any = None, empty_slots: Any = None,
                             prompt_logits: Sequence[bool] | None = None) -> Any:
        """Returns float32 logits [B, 1, vocab] of each prompt's last token. With `prompt_logits` (one flag per
        prompt) returns (those logits, per prompt: None, or when flagged float32 logits [n - start, vocab] of every
        position computed, start_pos .. prompt_len - 1). The extra logits cost an LM head pass and a read-back per 32
        rows, so only prompts that ask for them (prompt logprobs) pay it."""
        layer_caches = kv_cache[0]
        block_size = layer_caches[0][0].shape[2]
        tables = self._group_tables(page_table)
        lens = [int(x) for x in prompt_lens]
        starts = [int(x) for x in start_pos] if start_pos is not None else [0] * len(lens)
        out = torch.empty(len(lens), 1, self.model.args.vocab_size)
        wanted = list(prompt_logits) if prompt_logits is not None else [False] * len(lens)
        if len(wanted) != len(lens):
            raise ValueError(f"prompt_logits has {len(wanted)} flags for {len(lens)} prompts")
        every: list[torch.Tensor | None] = [None] * len(lens)
        for i, (n, start) in enumerate(zip(lens, starts, strict=True)):
            if n > self.max_seq_len:
                raise ValueError(f"prompt of {n} tokens is longer than max_seq_len {self.max_seq_len}")
            if self.max_prefill_chunk % block_size:
                # A later chunk would start mid-block and its cache fill would land at the wrong positions.
                raise ValueError(f"max_prefill_chunk {self.max_prefill_chunk} must be a multiple of the KV block "
                                 f"size {block_size}")
            if not 0 <= start < n or start % block_size:
                raise ValueError(f"start_pos {start} must be a whole number of blocks ({block_size}) below {n}")
            rows = tables[:, i, : -(-n // block_size)].to(torch.int32)
            if wanted[i]:
                every[i] = self._prefill_user(tokens[i, :n], start, rows, layer_caches, block_size, every_row=True)
                out[i, 0] = every[i][-1]
            else:
                out[i, 0] = self._prefill_user(tokens[i, :n], start, rows, layer_caches, block_size)
        return (out, every) if prompt_logits is not None else out

    def _group_tables(self, page_table: torch.Tensor) -> torch.Tensor:
        """Page tables as [G, B, W]: one table [B, W] for every layer, or one per KV-cache group (vLLM's hybrid
        KV cache: model.kv_groups says which group each layer reads)."""
        groups = self.model.n_kv_groups
        tables = page_table[None] if page_table.dim() == 2 and groups == 1 else page_table
        if tables.dim() != 3 or tables.shape[0] != groups:
            raise ValueError(f"page_table {tuple(page_table.shape)}: expected "
                             + ("[B, W]" if groups == 1 else f"[{groups}, B, W], one table per KV-cache group"))
        return tables

    def page_table_shape(self, users: int, width: int) -> tuple[int, ...]:
        """The shape of a page table for `users` rows of `width` blocks: [B, W], or [G, B, W] with G KV-cache
        groups."""
        groups = self.model.n_kv_groups
        return (users, width) if groups == 1 else (groups, users, width)

    def _per_group(self, tables: torch.Tensor) -> Any:
        """[G, 1, W] host tables on the device: the one table, or one per group (what Transformer takes)."""
        out = [self._to_device(t.contiguous(), ttnn.int32) for t in tables]
        return out[0] if len(out) == 1 else out

    def _prefill_user(self, tokens: torch.Tensor, start: int, page_rows: torch.Tensor, caches: list,
                      block_size: int, every_row: bool = False) -> torch.Tensor:
        """The last token's logits [vocab]; every_row: the logits [n - start, vocab] of every position from start.
        page_rows [G, blocks]: the user's blocks in each KV-cache group."""
        n = tokens.shape[0]
        chunk = start
        rows: list[torch.Tensor] = []
        while True:
            # Chunks start on block boundaries; each but the last is max_prefill_chunk long.
            length = min(n - chunk, self.max_prefill_chunk)
            padded = prefill_bucket(length)
            ids = torch.zeros(padded, dtype=torch.int32)
            ids[:length] = tokens[chunk : chunk + length]
            first_block, end_block = chunk // block_size, -(-(chunk + length) // block_size)
            # Attention may read up to the padded end; columns past the user's blocks point at the null block 0,
            # whose rows only the discarded padding queries can see.
            table = torch.zeros(page_rows.shape[0], 1, -(-(chunk + padded) // block_size), dtype=torch.int32)
            real = page_rows[:, : table.shape[2]]
            table[:, 0, : real.shape[1]] = real
            chunk_table = None
            if chunk > 0:
                chunk_table = self._per_group(page_rows[:, None, first_block:end_block])
            last = n - 1 - chunk
            is_last = chunk + length >= n
            logits = self.model.prefill(self._to_device(ids.reshape(1, 1, 1, -1), ttnn.uint32), chunk,
                                        last if is_last else None, caches,
                                        self._per_group(table), user_id=0, chunk_page_table=chunk_table,
                                        fill_len=(end_block - first_block) * block_size, return_hidden=every_row)
            if every_row:
                # One tile of logits at a time through the LM head and back to the host: the whole [S, vocab] would
                # not fit in L1.
                for t0 in range(0, length, TILE):
                    tile = self.model.to_host(self.model.logits_tile(logits, t0), vocab_sliced=True)
                    rows.append(tile[0, 0, : min(TILE, length - t0)].float())
                ttnn.deallocate(logits)
            chunk += length
            if is_last:
                if every_row:
                    return torch.cat(rows)
                return self.model.to_host(logits, vocab_sliced=True)[0, 0, last % TILE].float()

    def _to_device(self, t: torch.Tensor, dtype: Any) -> Any:
        return ttnn.from_torch(t, dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=self.mesh_device,
                               mesh_mapper=replicate(self.mesh_device))

    # ---------------- decode ----------------
    def _host_inputs(self, tokens: torch.Tensor, start_pos: torch.Tensor, page_table: torch.Tensor,
                     sample: dict[str, torch.Tensor] | None = None, write_group: torch.Tensor | None = None,
                     writes: int = 1) -> list[Any]:
        """Decode inputs padded to whole tiles of users (32 rows): the device's head ops place 32 users, one per
        core, and the padded users sit at position -1, which every paged op skips. With on-device sampling, each
        user's k, p and 1/T follow (padded users: k=1), then in mode "sample_full" the penalty columns (padded
        users: none)."""
        users = tokens.shape[0]
        rows = -(-users // TILE) * TILE
        tok = torch.zeros(rows, dtype=torch.int32)
        tok[:users] = tokens.to(torch.int32).reshape(users)
        pos = torch.full((rows,), -1, dtype=torch.int32)
        pos[:users] = start_pos.to(torch.int32).reshape(users)
        tables = self._group_tables(page_table)
        table = torch.zeros(tables.shape[0], rows, tables.shape[2], dtype=torch.int32)
        table[:, :users] = tables.to(torch.int32)
        # Tensor parallel: every chip of the mesh embeds, and samples, every user, so each gets a copy of the
        # tokens; the inputs of attention go to the chips that run those users (users_mapper: all of them, except
        # on a 2-D mesh, where a row's chips share its users out).
        mapper, users_of = replicate(self.mesh_device), self.model.users_mapper
        inputs = [
            ttnn.from_torch(tok.reshape(1, rows), ttnn.uint32, mesh_mapper=mapper),
            ttnn.from_torch(pos, ttnn.int32, mesh_mapper=users_of(0)),
            ttnn.from_torch(pos.clamp(min=0).reshape(1, rows), ttnn.uint32, mesh_mapper=users_of(1)),
            *(ttnn.from_torch(t, ttnn.int32, mesh_mapper=users_of(0)) for t in table),
        ]
        if writes > 1:  # the verify step's cache writes: group j's rows at their positions, the others -1
            group = torch.full((rows,), -1, dtype=torch.int64)
            group[:users] = write_group.reshape(users)
            inputs += [ttnn.from_torch(torch.where(group == j, pos, -1), ttnn.int32, mesh_mapper=users_of(0))
                       for j in range(writes)]
        if sample is not None:
            k = torch.ones(rows, dtype=torch.int32)
            p, temp = torch.ones(rows), torch.ones(rows)
            k[:users], p[:users], temp[:users] = sample["k"], sample["p"], sample["temp"]
            inputs += [ttnn.from_torch(k, ttnn.uint32, mesh_mapper=mapper),
                       ttnn.from_torch(p, ttnn.bfloat16, mesh_mapper=mapper),
                       ttnn.from_torch(temp, ttnn.bfloat16, mesh_mapper=mapper)]
            if PARAM_NAMES[0] in sample:
                for name in PARAM_NAMES:
                    col = torch.zeros(1, 1, rows, 1)
                    col[0, 0, :users, 0] = sample[name]
                    inputs.append(ttnn.from_torch(col, ttnn.float32, layout=ttnn.TILE_LAYOUT, mesh_mapper=mapper))
        return inputs

    def _decode_graph(self, inputs: list[Any], kv_cache: list, mode: str, writes: int = 1) -> Any:
        groups = self.model.n_kv_groups
        (tokens, pos, rot_idxs), tables = inputs[:3], inputs[3:3 + groups]
        n = 3 + groups + (writes if writes > 1 else 0)
        write_pos, sample = inputs[3 + groups:n] or None, inputs[n:]
        logits = self.model.decode(tokens, pos, rot_idxs, tables[0] if groups == 1 else tables, kv_cache[0],
                                   write_pos)
        if mode != "logits":  # argmax and sampling need the whole vocabulary (tensor parallel: gathered)
            logits = self.model.full_vocab(logits)
        if mode == "argmax":
            return ttnn.argmax(logits, dim=3, keepdim=True)
        if mode in ("sample", "sample_full") and self._sampler is None:
            self._sampler = DeviceSampler(self.model.args.vocab_size, tokens.shape[-1])
        if mode == "sample":
            ids = self._sampler(logits, *sample)
            ttnn.deallocate(logits)
            return ids
        if mode == "sample_full":
            return self._sample_full(logits, *sample)
        return logits

    def _sample_full(self, logits: Any, k: Any, p: Any, temp: Any, *penalty: Any) -> tuple[Any, ...]:
        """Raw logprobs (before penalties, as vLLM's default logprobs_mode), then the penalised draw, then the
        sampled tokens' logprobs and ranks, and the slots' output counts updated on the device."""
        rows = logits.shape[-2]
        if self._penalties is None:
            self._penalties = DevicePenalties(self.mesh_device, self.model.args.vocab_size, rows)
        top_values, top_ids = self._sampler.top(logits)
        raw = raw_logprobs(logits, top_values, top_ids)
        ttnn.deallocate(top_values)
        penalised = self._penalties.apply(logits, *penalty)
        ids = self._sampler(penalised, k, p, temp)
        ttnn.deallocate(penalised)
        hot = self._penalties.one_hot(ids)
        logprob, rank = sampled_logprob(raw, hot)
        self._penalties.update(hot)
        for t in {id(x): x for x in (hot, raw.lse, raw.logits, logits)}.values():
            ttnn.deallocate(t)
        return ids, logprob, rank, raw.top_logprobs, raw.top_ids

    def seed_users(self, seeds: list[int | None]) -> None:
        """Reseed the PRNG of each user core whose entry is not None (ttnn.manual_seed, outside any trace)."""
        users = [u for u, s in enumerate(seeds) if s is not None]
        if not users:
            return
        values = torch.tensor([seeds[u] & 0xFFFFFFFF for u in users], dtype=torch.int64)
        ttnn.manual_seed(self._to_device(values, ttnn.uint32),
                         user_ids=self._to_device(torch.tensor(users, dtype=torch.int64), ttnn.uint32))

    def decode_forward_text(self, tokens: torch.Tensor, start_pos: torch.Tensor, page_table: torch.Tensor,
                            kv_cache: list, enable_trace: bool = True, read_from_device: bool = True,
                            mode: str = "logits", sample: dict[str, torch.Tensor] | None = None,
                            seeds: list[int | None] | None = None, history: Any = None,
                            history_key: Any = None, write_group: torch.Tensor | None = None,
                            writes: int = 1) -> Any:
        """mode: "logits" (returned to the host), "argmax" (greedy token ids), "sample" (ttnn.sampling with the
        per-user k / p / temp in `sample`; users with a seed have their core PRNG reseeded right before the step,
        after any compile or capture run, so their first draw is the seed's first) or "sample_full" (the same
        draw from penalised logits, with `sample`'s penalty columns too; returns (ids, {"logprob", "rank",
        "top_logprobs", "top_ids"}) with the raw logprobs of the sampled and the 32 best tokens).

        sample_full keeps each slot's token history on the device: `history` is each slot's (prompt tokens, output
        tokens so far) or None, and `history_key` names who owns the slots; the device state is rewritten from
        `history` when the key changes or the state went stale (a step in another mode, a capture), and otherwise
        advanced by the step itself.

        Speculative decoding's verify step (`writes` > 1): a user's k + 1 scored positions sit on k + 1 rows with
        the same page-table row, and `write_group` [users] says which of the `writes` cache-write calls writes each
        row (Model.decode: a user's positions share a cache tile, so each goes in its own call). Every row computes
        what a decode step at its position computes, reading the rows before it in the same step."""
        users = tokens.shape[0]
        if writes > 1 and users == self.verify_rows:
            pass  # the verify step fills every row the device decodes (a batch-1 engine's too)
        elif users != self.max_batch_size:
            raise ValueError(f"decode batch must be padded to max_batch_size {self.max_batch_size}, got {users}")
        if (writes > 1) != (write_group is not None):
            raise ValueError("write_group goes with writes > 1 (the speculative verify step) only")
        if writes > 1 and mode in ("sample", "sample_full"):
            raise ValueError("the verify step returns logits or greedy ids; vLLM's rejection sampler draws")
        if (mode in ("sample", "sample_full")) != (sample is not None):
            raise ValueError("per-user sampling parameters go with modes 'sample' and 'sample_full' only")
        if mode == "sample_full" and (history is None or len(history) != users):
            raise ValueError(f"mode 'sample_full' needs each of the {users} slots' token history (or None)")
        host_inputs = self._host_inputs(tokens, start_pos, page_table, sample, write_group, writes)
        if not enable_trace:
            device_inputs = [ttnn.to_device(t, self.mesh_device) for t in host_inputs]
            self.seed_users(seeds or [])
            if mode == "sample_full":
                self._sync_history(history, history_key, device_inputs[0].shape[-1])
            out = self._decode_graph(device_inputs, kv_cache, mode, writes)
        else:
            key = (tuple(page_table.shape), mode, id(kv_cache), writes)
            trace = self._traces.get(key)
            if trace is None:
                trace = self._capture(key, host_inputs, kv_cache, mode)
            self.seed_users(seeds or [])
            if mode == "sample_full":
                self._sync_history(history, history_key, trace.inputs[0].shape[-1])
            for src, dst in zip(host_inputs, trace.inputs, strict=True):
                ttnn.copy_host_to_device_tensor(src, dst)
            ttnn.execute_trace(self.mesh_device, trace.trace_id, cq_id=0, blocking=False)
            out = trace.output
        # Only a sample_full step advances the device's token history; any other leaves it behind.
        self._history_key = history_key if mode == "sample_full" else None
        result = (out, mode != "logits", users)
        return self.process_decode_output_host(*self.read_decode_output(result)) if read_from_device else result

    def _sync_history(self, history: Any, key: Any, rows: int) -> None:
        if self._penalties is None:  # built by the graph; a first eager step needs it before
            self._penalties = DevicePenalties(self.mesh_device, self.model.args.vocab_size, rows)
        if key is None or key != self._history_key:
            self._penalties.load(list(history) + [None] * (rows - len(history)))

    def _capture(self, key: tuple, host_inputs: list[Any], kv_cache: list, mode: str) -> _DecodeTrace:
        """Compile run, then capture. Traces for another shape or cache are released first; the variants of one
        shape (logits, on-device argmax, on-device sampling) are kept side by side, so a batch switching between
        device and host sampling replays instead of re-capturing."""
        # (Decode and verify traces, told apart by their write count, are each kept at their latest shape.)
        for k in [k for k in self._traces if (k[0], k[2]) != (key[0], key[2]) and k[3] == key[3]]:
            ttnn.release_trace(self.mesh_device, self._traces.pop(k).trace_id)
        device_inputs = [ttnn.to_device(t, self.mesh_device) for t in host_inputs]
        writes = key[3]
        self._decode_graph(device_inputs, kv_cache, mode, writes)  # compile run (writes the same rows again later)
        tid = ttnn.begin_trace_capture(self.mesh_device, cq_id=0)
        output = self._decode_graph(device_inputs, kv_cache, mode, writes)
        ttnn.end_trace_capture(self.mesh_device, tid, cq_id=0)
        self._history_key = None  # the compile run advanced the token history
        self.trace_captures += 1
        logger.info("captured decode trace %d for shape %s", tid, key[0])
        trace = _DecodeTrace(tid, device_inputs, output)
        self._traces[key] = trace
        return trace

    def read_decode_output(self, tt_out: Any, async_read: bool = False) -> tuple[Any, bool, int]:
        """Bring a decode result (decode_forward with read_from_device=False) to the host. async_read starts a
        non-blocking copy and records an event after it: the host is free until process_decode_output_host, which
        waits on that event (what lets the next step's host work overlap this step's device work)."""
        out, is_tokens, users = tt_out
        if isinstance(out, tuple):  # sample_full: ids and the logprob tensors
            if async_read:
                reads = tuple(ttnn.from_device(t, blocking=False) for t in out)
                return _PendingRead(reads, ttnn.record_event(self.mesh_device, 0)), is_tokens, users
            return tuple(self.model.to_host(t, vocab_sliced=False) for t in out), is_tokens, users
        if async_read:
            return _PendingRead(ttnn.from_device(out, blocking=False), ttnn.record_event(self.mesh_device, 0)), \
                is_tokens, users
        return self.model.to_host(out, vocab_sliced=not is_tokens), is_tokens, users

    def process_decode_output_host(self, host_out: Any, is_tokens: bool = False, users: int | None = None) -> Any:
        if isinstance(host_out, _PendingRead):
            ttnn.event_synchronize(host_out.event)
            t = host_out.tensor
            host_out = tuple(self.model.to_host(x, vocab_sliced=False) for x in t) if isinstance(t, tuple) else \
                self.model.to_host(t, vocab_sliced=not is_tokens)
        users = users if users is not None else self.max_batch_size
        if isinstance(host_out, tuple):
            ids = host_out[0]
            logprob, rank, top_logprobs, top_ids = (x.reshape(-1, x.shape[-1])[:users] for x in host_out[1:])
            return ids.reshape(-1)[:users].to(torch.int64), {
                "logprob": logprob[:, 0].float(), "rank": rank[:, 0].round().to(torch.int64),
                "top_logprobs": top_logprobs.float(), "top_ids": top_ids.to(torch.int64)}
        if is_tokens:
            return host_out.reshape(-1)[:users].to(torch.int64)
        vocab = self.model.args.vocab_size
        return host_out.reshape(-1, host_out.shape[-1])[:users, :vocab].float().unsqueeze(1)

    def release(self) -> None:
        for t in self._traces.values():
            ttnn.release_trace(self.mesh_device, t.trace_id)
        self._traces.clear()
