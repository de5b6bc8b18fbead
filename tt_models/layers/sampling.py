"""Sampling the decode step's logits on the device, as tt_transformers' TTSampling does on one chip: each user's 32
best candidates (ttnn.topk over vocabulary chunks narrow enough for it), then ttnn.sampling draws among them with the
user's top-k, top-p and temperature from that user's core PRNG (seeded with ttnn.manual_seed)."""

from __future__ import annotations

from typing import Any

import torch

from tt_models.backend import ttnn

MAX_TOP_K = 32  # ttnn.sampling's k is at most 32: the candidates topk hands it per chunk
TOPK_MAX_WIDTH = 65536  # the widest row tt_transformers hands ttnn.topk in one call
TILE = 32


class DeviceSampler:
    def __init__(self, vocab: int, rows: int) -> None:
        self.vocab, self.rows = vocab, rows
        # ttnn.sampling needs a power-of-two number of candidate tiles: split the vocabulary into 1, 2, 4, ...
        # chunks, each within topk's width.
        n = 1
        while -(-vocab // n) > TOPK_MAX_WIDTH:
            n *= 2
        width = -(-vocab // n // TILE) * TILE if n > 1 else vocab
        self.chunks = [(a, min(a + width, vocab)) for a in range(0, vocab, width)]
        if len(self.chunks) & (len(self.chunks) - 1):
            raise ValueError(f"vocabulary {vocab} does not split into a power-of-two number of topk chunks")
        # Logits come off the device in bf16, where exact ties at the top are common. One tie rule everywhere:
        # the lowest vocabulary id first. argmax keeps the first maximum; topk does when asked to be stable (0.81.1
        # refuses `stable` with a label tensor, so a chunk's positions become vocabulary ids by adding the chunk's
        # offset); sampling ranks its candidates stably by position, so candidates laid out chunk by chunk, each
        # chunk best first with ties by id, make k = 1 and a top-p that keeps one token pick the lowest id too.

    def candidates(self, logits: Any) -> tuple[Any, Any]:
        """Each chunk's 32 best values and their vocabulary ids (uint32), side by side: [1, 1, rows, 32 * chunks];
        equal values lowest id first."""
        values, indices = [], []
        for a, b in self.chunks:
            part = logits if len(self.chunks) == 1 else ttnn.slice(logits, [0, 0, 0, a], [1, 1, self.rows, b])
            v, i = ttnn.topk(part, MAX_TOP_K, dim=-1, stable=True)
            if part is not logits:
                ttnn.deallocate(part)
            if i.dtype != ttnn.uint32:  # 16-bit positions for a chunk within 64K
                i32 = ttnn.typecast(i, ttnn.uint32)
                ttnn.deallocate(i)
                i = i32
            if a:
                ids = ttnn.add(i, a)
                ttnn.deallocate(i)
                i = ids
            values.append(v)
            indices.append(i)
        v = values[0] if len(values) == 1 else ttnn.concat(values, dim=-1)
        i = indices[0] if len(indices) == 1 else ttnn.concat(indices, dim=-1)
        return v, i

    def top(self, logits: Any) -> tuple[Any, Any]:
        """The 32 best values of each row over the whole vocabulary, best first, with their ids: one topk over the
        chunks' candidates (their ids as its labels) when there are several. With labels the merge cannot be
        stable: among equal values across chunks the device's order is its network's (what logprobs list first)."""
        v, i = self.candidates(logits)
        if len(self.chunks) == 1:
            return v, i
        best, ids = ttnn.topk(v, MAX_TOP_K, dim=-1, indices_tensor=i)
        ttnn.deallocate(v)
        ttnn.deallocate(i)
        return best, ids

    def __call__(self, logits: Any, k: Any, p: Any, temp: Any) -> Any:
        """logits [1, 1, rows, vocab] -> sampled ids [1, 1, 1, rows] uint32."""
        v, i = self.candidates(logits)
        if v.dtype != ttnn.bfloat16:  # fp32 logits at the simulator's reference precision
            v = ttnn.typecast(v, ttnn.bfloat16)
        # The op takes 32-bit ids in ROW_MAJOR.
        i = ttnn.to_layout(i, ttnn.ROW_MAJOR_LAYOUT)
        return ttnn.sampling(v, i, k, p, temp)


def device_params(temperature: list[float], top_k: list[int], top_p: list[float]) -> dict[str, torch.Tensor]:
    """Per-user vLLM parameters as ttnn.sampling takes them: temperature 0 (greedy) becomes k=1; k is vLLM's top_k
    (1..32); p is top_p (1.0 keeps everything the top-k kept); temp is 1/T."""
    greedy = [t == 0 for t in temperature]
    k = [1 if g else int(x) for g, x in zip(greedy, top_k, strict=True)]
    bad = [x for x in k if not 1 <= x <= MAX_TOP_K]
    if bad:
        raise ValueError(f"on-device sampling draws among the {MAX_TOP_K} best candidates: top_k {bad[0]} needs "
                         f"host sampling")
    return {"k": torch.tensor(k, dtype=torch.int32),
            "p": torch.tensor([1.0 if g else float(x) for g, x in zip(greedy, top_p, strict=True)]),
            "temp": torch.tensor([1.0 if g else 1.0 / float(t) for g, t in zip(greedy, temperature, strict=True)])}
