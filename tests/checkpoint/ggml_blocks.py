"""ggml's block formats decoded the way ggml's scalar C code does (ggml-quants.c, dequantize_row_*): one block at a
time, element by element, float32 throughout. An independent reference for the dequantization gguf-py and
transformers apply, written from the block layouts rather than from gguf-py's vectorised code."""

from __future__ import annotations

import numpy as np

QK_K = 256  # elements per k-quant super-block
# Bytes per block and elements per block, by ggml type name.
BLOCKS = {"Q8_0": (34, 32), "Q5_0": (22, 32), "Q4_K": (144, QK_K), "Q6_K": (210, QK_K)}


def _f16(b: np.ndarray) -> np.float32:
    return np.float32(b.view(np.float16)[0])


def _q8_0(b: np.ndarray) -> np.ndarray:
    # struct { ggml_half d; int8_t qs[32]; }
    d = _f16(b[0:2])
    return np.array([d * np.float32(q) for q in b[2:34].view(np.int8)], dtype=np.float32)


def _q5_0(b: np.ndarray) -> np.ndarray:
    # struct { ggml_half d; uint8_t qh[4]; uint8_t qs[16]; }: element j takes the low nibble of qs[j] and bit j of
    # qh as its fifth bit, element j + 16 the high nibble and bit j + 16; both offset by 16.
    d = _f16(b[0:2])
    qh = int(b[2:6].view(np.uint32)[0])
    y = np.empty(32, np.float32)
    for j in range(16):
        x0 = (int(b[6 + j]) & 0x0F) | (((qh >> j) & 1) << 4)
        x1 = (int(b[6 + j]) >> 4) | (((qh >> (j + 16)) & 1) << 4)
        y[j] = d * np.float32(x0 - 16)
        y[j + 16] = d * np.float32(x1 - 16)
    return y


def _scale_min_k4(j: int, q: np.ndarray) -> tuple[int, int]:
    # Eight 6-bit scales and eight 6-bit mins packed in 12 bytes (ggml's get_scale_min_k4).
    if j < 4:
        return int(q[j]) & 63, int(q[j + 4]) & 63
    sc = (int(q[j + 4]) & 0x0F) | ((int(q[j - 4]) >> 6) << 4)
    m = (int(q[j + 4]) >> 4) | ((int(q[j]) >> 6) << 4)
    return sc, m


def _q4_k(b: np.ndarray) -> np.ndarray:
    # struct { ggml_half d; ggml_half dmin; uint8_t scales[12]; uint8_t qs[128]; }: 64 elements per 32 bytes of qs,
    # low nibbles then high nibbles, each 32-element half with its own scale and min.
    d, dmin = _f16(b[0:2]), _f16(b[2:4])
    scales, qs = b[4:16], b[16:144]
    y = np.empty(QK_K, np.float32)
    for n in range(QK_K // 64):
        sc1, m1 = _scale_min_k4(2 * n, scales)
        sc2, m2 = _scale_min_k4(2 * n + 1, scales)
        d1, mm1 = d * np.float32(sc1), dmin * np.float32(m1)
        d2, mm2 = d * np.float32(sc2), dmin * np.float32(m2)
        for l in range(32):
            q = int(qs[32 * n + l])
            y[64 * n + l] = d1 * np.float32(q & 0x0F) - mm1
            y[64 * n + 32 + l] = d2 * np.float32(q >> 4) - mm2
    return y


def _q6_k(b: np.ndarray) -> np.ndarray:
    # struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; ggml_half d; }: per 128 elements, 64 bytes of ql
    # (low 4 bits), 32 of qh (2 high bits each for four elements) and 8 scales of 16 elements; offset by 32.
    ql, qh, sc, d = b[0:128], b[128:192], b[192:208].view(np.int8), _f16(b[208:210])
    y = np.empty(QK_K, np.float32)
    for n in range(QK_K // 128):
        L, H, S = ql[64 * n:], qh[32 * n:], sc[8 * n:]
        for l in range(32):
            i = l // 16
            h = int(H[l])
            q1 = ((int(L[l]) & 0x0F) | (((h >> 0) & 3) << 4)) - 32
            q2 = ((int(L[l + 32]) & 0x0F) | (((h >> 2) & 3) << 4)) - 32
            q3 = ((int(L[l]) >> 4) | (((h >> 4) & 3) << 4)) - 32
            q4 = ((int(L[l + 32]) >> 4) | (((h >> 6) & 3) << 4)) - 32
            base = 128 * n
            y[base + l] = d * np.float32(S[i]) * np.float32(q1)
            y[base + l + 32] = d * np.float32(S[i + 2]) * np.float32(q2)
            y[base + l + 64] = d * np.float32(S[i + 4]) * np.float32(q3)
            y[base + l + 96] = d * np.float32(S[i + 6]) * np.float32(q4)
    return y


_DECODERS = {"Q8_0": _q8_0, "Q5_0": _q5_0, "Q4_K": _q4_k, "Q6_K": _q6_k}


def dequantize_rows(raw: np.ndarray, type_name: str, row_len: int, rows: list[int]) -> np.ndarray:
    """The given rows of a quantized tensor (raw bytes, one row of `row_len` elements per line) as float32."""
    block_bytes, block_elems = BLOCKS[type_name]
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, row_len // block_elems * block_bytes)
    decode = _DECODERS[type_name]
    out = np.empty((len(rows), row_len), np.float32)
    for r, row in enumerate(rows):
        blocks = raw[row].reshape(-1, block_bytes)
        out[r] = np.concatenate([decode(blk) for blk in blocks])
    return out
