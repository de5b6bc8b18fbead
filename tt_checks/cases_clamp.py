"""Hand-written corpus cases: ttnn.clamp (GPT-OSS's clamped SwiGLU clamps its gate above and its up projection on
both sides), the binary ops' SIGMOID input activation the same SwiGLU multiplies with, and GLM-4.5's router: the
sigmoid fused on fp32 logits that a broadcast correction bias is added to, and the RECIP fused on a broadcast
column that renormalizes the weights (see tt_checks/corpus_cases.py for the encoding helpers)."""

from __future__ import annotations

from collections.abc import Iterator

from tt_checks.cases_eltwise import HS, TALL, X, acts
from tt_checks.corpus_cases import DRAM, L1, T, block, call, width


def clamp() -> Iterator[tuple[str, dict]]:
    yield "clamp/ok", call("clamp", T(X), -7.0, 7.0)
    yield "clamp/max-only", call("clamp", T(X), None, 7.0)
    yield "clamp/min-only", call("clamp", T(X), -7.0, None)
    yield "clamp/max-kw", call("clamp", T(X), max=7.0)
    yield "clamp/neither", call("clamp", T(X))
    yield "clamp/min-above-max", call("clamp", T(X), 7.0, -7.0)
    yield "clamp/int-bounds", call("clamp", T(X), -7, 7)
    yield "clamp/fp32", call("clamp", T(X, "FLOAT32"), -7.0, 7.0)
    yield "clamp/bfp8", call("clamp", T(X, "BFLOAT8_B"), -7.0, 7.0)
    yield "clamp/bfp4", call("clamp", T(X, "BFLOAT4_B"), -7.0, 7.0)
    yield "clamp/int32", call("clamp", T(X, "INT32"), -7, 7)
    yield "clamp/int32-float-bounds", call("clamp", T(X, "INT32"), -7.5, 7.5)
    yield "clamp/uint32", call("clamp", T(X, "UINT32"), 0, 7)
    yield "clamp/uint16", call("clamp", T(X, "UINT16"), 0, 7)
    yield "clamp/row-major", call("clamp", T(X, layout="ROW_MAJOR"), -7.0, 7.0)
    yield "clamp/unaligned", call("clamp", T([1, 1, 30, 50]), -7.0, 7.0)
    yield "clamp/rank6", call("clamp", T([1, 2, 1, 4, 32, 64]), None, 7.0)
    yield "clamp/l1", call("clamp", T(X, m=L1), -7.0, 7.0)
    yield "clamp/to-l1", call("clamp", T(X), -7.0, 7.0, memory_config=L1)
    yield "clamp/to-dram", call("clamp", T(X, m=L1), -7.0, 7.0, memory_config=DRAM)
    yield "clamp/height-sharded", call("clamp", T(TALL, m=HS), -7.0, 7.0)
    yield "clamp/width-sharded", call("clamp", T([1, 1, 32, 256], m=width((32, 32), 8)), -7.0, 7.0)
    yield "clamp/block-sharded", call("clamp", T([1, 1, 128, 128], m=block((32, 32), 4, 4)), -7.0, 7.0)
    yield "clamp/output-tensor", call("clamp", T(X), -7.0, 7.0, output_tensor=T(X))
    yield "clamp/output-tensor-fp32", call("clamp", T(X), -7.0, 7.0, output_tensor=T(X, "FLOAT32"))
    yield "clamp/output-tensor-wrong-shape", call("clamp", T(X), -7.0, 7.0, output_tensor=T([1, 1, 32, 32]))
    yield "clamp/output-tensor-int32", call("clamp", T(X), -7.0, 7.0, output_tensor=T(X, "INT32"))
    yield "clamp/output-tensor-row-major", call("clamp", T(X), -7.0, 7.0, output_tensor=T(X, layout="ROW_MAJOR"))
    yield "clamp/tensor-bounds", call("clamp", T(X), T(X), T(X))


def sigmoid_activation() -> Iterator[tuple[str, dict]]:
    for op in ("mul", "add"):
        yield f"{op}/sigmoid-b", call(op, T(X), T(X), input_tensor_b_activations=acts("SIGMOID"))
        yield f"{op}/sigmoid-b-fp32", call(op, T(X, "FLOAT32"), T(X, "FLOAT32"),
                                           input_tensor_b_activations=acts("SIGMOID"))
    yield "mul/sigmoid-b-rank6", call("mul", T([1, 2, 1, 4, 32, 64]), T([1, 2, 1, 4, 32, 64]),
                                      input_tensor_b_activations=acts("SIGMOID"))
    yield "mul/sigmoid-a", call("mul", T(X), T(X), input_tensor_a_activations=acts("SIGMOID"))
    fp32 = "FLOAT32"
    yield "add/sigmoid-a-fp32-row", call("add", T(X, fp32), T([1, 1, 1, 64], fp32),
                                         input_tensor_a_activations=acts("SIGMOID"))
    yield "mul/sigmoid-a-fp32", call("mul", T(X, fp32), T(X, fp32), input_tensor_a_activations=acts("SIGMOID"))


def recip_activation() -> Iterator[tuple[str, dict]]:
    fp32 = "FLOAT32"
    yield "mul/recip-b-fp32-column", call("mul", T(X, fp32), T([1, 1, 32, 1], fp32),
                                          input_tensor_b_activations=acts("RECIP"))
    yield "mul/recip-b", call("mul", T(X), T(X), input_tensor_b_activations=acts("RECIP"))
    yield "mul/recip-a", call("mul", T(X), T(X), input_tensor_a_activations=acts("RECIP"))
    yield "add/recip-b-fp32", call("add", T(X, fp32), T(X, fp32), input_tensor_b_activations=acts("RECIP"))
    yield "mul/recip-b-bfp8", call("mul", T(X, "BFLOAT8_B"), T([1, 1, 32, 1]),
                                   input_tensor_b_activations=acts("RECIP"))


def cases() -> Iterator[tuple[str, dict]]:
    yield from clamp()
    yield from sigmoid_activation()
    yield from recip_activation()
