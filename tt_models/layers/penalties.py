"""vLLM's presence / frequency / repetition penalties applied to the decode step's logits on the device, with each
user slot's token history kept there (vllm/model_executor/layers/utils.py apply_penalties: repetition over prompt and
output tokens first, dividing positive logits and multiplying the others, then frequency * output counts and
presence * (count > 0) subtracted).

State per slot, on the device: a 0/1 prompt mask and the output token counts, both [1, 1, rows, vocab] fp32 (counts
exact to 2**24). The host writes them whole when slots change hands (`load`); after each step the trace adds the
sampled token's one-hot row to the counts in place (eq of the vocabulary ids against the sampled ids, then add with
output_tensor=counts), so a running request's counts never leave the device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tt_models.backend import ttnn
from tt_models.layers.collectives import replicate

F32 = ttnn.float32
DRAM = ttnn.DRAM_MEMORY_CONFIG  # [rows, vocab] intermediates: the logits may sit in L1, their copies need not


def penalty_params(presence: list[float], frequency: list[float], repetition: list[float]) -> dict[str, torch.Tensor]:
    """Per-user vLLM penalties as the device step takes them. The repetition factor for a seen token is
    1 + rep_a + rep_b * (logit > 0), i.e. rep for non-positive logits and 1/rep for positive ones; a token never
    seen keeps factor 1."""
    rep = torch.tensor(repetition, dtype=torch.float64)
    if (rep <= 0).any():
        raise ValueError(f"repetition_penalty must be > 0, got {float(rep.min())}")
    return {"rep_a": (rep - 1).float(), "rep_b": (1 / rep - rep).float(),
            "freq": torch.tensor(frequency, dtype=torch.float32), "pres": torch.tensor(presence, dtype=torch.float32)}


PARAM_NAMES = ("rep_a", "rep_b", "freq", "pres")


class DevicePenalties:
    def __init__(self, mesh_device: Any, vocab: int, rows: int) -> None:
        self.mesh_device, self.vocab, self.rows = mesh_device, vocab, rows
        zeros = torch.zeros(1, 1, rows, vocab)
        self.prompt = self._put(zeros)
        self.counts = self._put(zeros)
        # Vocabulary ids as fp32 (exact below 2**24), one row broadcast against the [rows, 1] sampled ids.
        self.vocab_ids = self._put(torch.arange(vocab, dtype=torch.float32).reshape(1, 1, 1, vocab))

    def _put(self, t: torch.Tensor) -> Any:
        return ttnn.from_torch(t, F32, layout=ttnn.TILE_LAYOUT, device=self.mesh_device,
                               memory_config=ttnn.DRAM_MEMORY_CONFIG, mesh_mapper=replicate(self.mesh_device))

    def host_state(self, history: Sequence[tuple[Sequence[int], Sequence[int]] | None]) -> tuple[Any, Any]:
        """The prompt mask and output counts of each slot's (prompt tokens, output tokens), as host tensors
        `load` copies in (empty slots: zeros)."""
        prompt = torch.zeros(self.rows, self.vocab)
        counts = torch.zeros(self.rows, self.vocab)
        for row, h in enumerate(history):
            if h is None:
                continue
            p, o = (torch.as_tensor(list(x), dtype=torch.int64) for x in h)
            if ((p < 0) | (p >= self.vocab)).any() or ((o < 0) | (o >= self.vocab)).any():
                raise ValueError(f"slot {row}: token ids outside the vocabulary of {self.vocab}")
            prompt[row, p] = 1.0
            counts[row].index_add_(0, o, torch.ones(len(o)))
        mapper = replicate(self.mesh_device)
        return tuple(ttnn.from_torch(t.reshape(1, 1, self.rows, self.vocab), F32, layout=ttnn.TILE_LAYOUT,
                                     mesh_mapper=mapper) for t in (prompt, counts))

    def load(self, history: Sequence[tuple[Sequence[int], Sequence[int]] | None]) -> None:
        prompt, counts = self.host_state(history)
        ttnn.copy_host_to_device_tensor(prompt, self.prompt)
        ttnn.copy_host_to_device_tensor(counts, self.counts)

    def apply(self, logits: Any, rep_a: Any, rep_b: Any, freq: Any, pres: Any) -> Any:
        """logits [1, 1, rows, vocab] penalised as vLLM does; the parameters are [1, 1, rows, 1] fp32 columns.
        The factor is built in fp32 (the fp32 column first, so each product takes its dtype) and applied once."""
        seen = ttnn.gt(ttnn.add(self.prompt, self.counts), 0.0)
        positive = ttnn.gt(logits, 0.0, memory_config=DRAM)
        factor = ttnn.add(ttnn.mul(rep_b, positive), rep_a)
        factor = ttnn.add(ttnn.mul(seen, factor), 1.0)
        out = ttnn.mul(logits, factor, memory_config=DRAM)
        for t in (seen, positive, factor):
            ttnn.deallocate(t)
        freq_term = ttnn.mul(freq, self.counts)
        penalised = ttnn.sub(out, freq_term)
        ttnn.deallocate(out)
        present = ttnn.gt(self.counts, 0.0)
        pres_term = ttnn.mul(pres, present)
        out = ttnn.sub(penalised, pres_term)
        for t in (freq_term, penalised, present, pres_term):
            ttnn.deallocate(t)
        return out

    def one_hot(self, ids: Any) -> Any:
        """ids [1, 1, 1, rows] uint32 ROW_MAJOR (ttnn.sampling's output) -> [1, 1, rows, vocab] fp32 one-hot rows."""
        col = ttnn.reshape(ids, [1, 1, self.rows, 1])
        col = ttnn.to_layout(col, ttnn.TILE_LAYOUT)
        colf = ttnn.typecast(col, F32)
        hot = ttnn.eq(self.vocab_ids, colf)
        ttnn.deallocate(colf)
        return hot

    def update(self, hot: Any) -> None:
        """The sampled tokens join each slot's output counts, in place (the trace's next replay reads them)."""
        ttnn.add(self.counts, hot, output_tensor=self.counts)
