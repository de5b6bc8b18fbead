"""The differential corpus: op calls written as plain JSON, so the same call can be made on the real ttnn (which
records the verdict into tests/fixtures/ttnn_corpus_0.81.1.json) and on the simulator (tests/sim/test_corpus.py),
and the two verdicts and output specs compared.

A call is {"op": "ttnn.linear", "args": [...], "kwargs": {...}} with every value encoded:
  tensors      {"t": "tensor", "shape", "dtype", "layout", "mem" (or null for a host tensor)}; contents are zeros
               (on a mock device nothing executes, so validation never sees values)
  memory cfg   {"t": "mem", "layout", "buffer", "shard": {"grid": [[x0, y0, x1, y1], ...], "shape", "orientation"}}
  enums        {"t": "enum", "v": "DataType.BFLOAT16"}
  config objs  {"t": "obj", "cls": "MatmulMultiCoreReuseMultiCast1DProgramConfig", "fields": {...}} (the real
               classes' constructor keywords: ShardSpec, CoreCoord, CoreRange, CoreRangeSet, program and compute
               kernel configs, UnaryWithParam, ...)
  torch        {"t": "torch", "shape", "dtype"}    the device  {"t": "device"}
This module imports without any ttnn; `decode` builds objects of whichever ttnn module it is handed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import torch

# Constructor keywords per config class, in the real 0.81.1 signatures (keyword-only unless listed in _POSITIONAL).
CONFIG_FIELDS: dict[str, tuple[str, ...]] = {
    "CoreCoord": ("x", "y"),
    "CoreRange": ("start", "end"),
    "CoreRangeSet": ("ranges",),
    "CoreGrid": ("x", "y"),
    "ShardSpec": ("grid", "shape", "orientation"),
    "UnaryWithParam": ("op_type", "param"),
    "WormholeComputeKernelConfig": ("math_fidelity", "math_approx_mode", "fp32_dest_acc_en", "packer_l1_acc",
                                    "dst_full_sync_en"),
    "MatmulMultiCoreReuseProgramConfig": ("compute_with_storage_grid_size", "in0_block_w", "out_subblock_h",
                                          "out_subblock_w", "per_core_M", "per_core_N"),
    "MatmulMultiCoreReuseMultiCastProgramConfig": ("compute_with_storage_grid_size", "in0_block_w", "out_subblock_h",
                                                   "out_subblock_w", "out_block_h", "out_block_w", "per_core_M",
                                                   "per_core_N", "transpose_mcast", "fused_activation",
                                                   "fuse_batch"),
    "MatmulMultiCoreReuseMultiCast1DProgramConfig": ("compute_with_storage_grid_size", "in0_block_w",
                                                     "out_subblock_h", "out_subblock_w", "out_block_h",
                                                     "out_block_w", "per_core_M", "per_core_N", "fuse_batch",
                                                     "fused_activation", "mcast_in0", "gather_in0",
                                                     "num_global_cb_receivers", "untilize_out"),
    "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig": ("in0_block_w", "per_core_M", "per_core_N",
                                                              "fused_activation", "num_workers_per_dram_bank"),
    "SDPAProgramConfig": ("compute_with_storage_grid_size", "q_chunk_size", "k_chunk_size", "exp_approx_mode",
                          "max_cores_per_head_batch"),
    "LayerNormShardedMultiCoreProgramConfig": ("compute_with_storage_grid_size", "subblock_w", "block_h", "block_w",
                                               "inplace", "legacy_reduction", "use_welford"),
    "LayerNormDefaultProgramConfig": ("legacy_reduction", "use_welford"),
    "SoftmaxShardedMultiCoreProgramConfig": ("compute_with_storage_grid_size", "subblock_w", "block_h", "block_w"),
    "SoftmaxDefaultProgramConfig": (),
}
# Classes built positionally (their real constructors take no keywords for these).
_POSITIONAL = {"CoreCoord", "CoreRange", "CoreRangeSet", "ShardSpec", "UnaryWithParam"}
_TORCH_DTYPES = {str(d): d for d in (torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.uint8)}


# ---------------- encoding (real objects or simulator objects -> JSON) ----------------
def _enum_name(v: Any) -> str | None:
    cls = type(v).__name__
    name = getattr(v, "name", None)
    if name is None or cls in ("type", "function"):
        return None
    if cls in ("DataType", "Layout", "TensorMemoryLayout", "BufferType", "ShardOrientation", "ShardStrategy",
               "MathFidelity", "UnaryOpType", "ShardMode"):
        return f"{cls}.{name}"
    return None


def _ranges(crs: Any) -> list[list[int]]:
    return [[r.start.x, r.start.y, r.end.x, r.end.y] for r in crs.ranges()]


def encode_mem(mc: Any) -> dict:
    shard = mc.shard_spec
    return {
        "t": "mem",
        "layout": mc.memory_layout.name,
        "buffer": mc.buffer_type.name,
        "shard": None if shard is None else {"grid": _ranges(shard.grid), "shape": list(shard.shape),
                                             "orientation": shard.orientation.name},
    }


def encode(v: Any) -> Any:
    """JSON form of a call argument (see the module docstring)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return {"t": "list" if isinstance(v, list) else "tuple", "v": [encode(x) for x in v]}
    if isinstance(v, dict):
        return {"t": "dict", "v": {str(k): encode(x) for k, x in v.items()}}
    if isinstance(v, torch.Tensor):
        return {"t": "torch", "shape": list(v.shape), "dtype": str(v.dtype)}
    cls = type(v).__name__
    if cls in ("Tensor",):
        dev = v.device() if callable(getattr(v, "device", None)) else None
        return {"t": "tensor", "shape": list(v.shape), "dtype": v.dtype.name, "layout": v.layout.name,
                "mem": encode_mem(v.memory_config()) if dev is not None else None}
    if cls in ("MeshDevice", "Device"):
        return {"t": "device"}
    if cls == "MemoryConfig":
        return encode_mem(v)
    if (name := _enum_name(v)) is not None:
        return {"t": "enum", "v": name}
    if cls == "CoreRangeSet":
        return {"t": "obj", "cls": cls, "fields": {"ranges": _ranges(v)}}
    if cls == "UnaryWithParam":
        params = list(getattr(v, "params", ()) or ())
        return {"t": "obj", "cls": cls, "fields": {"op_type": encode(v.op_type),
                                                   "param": params[0] if params else None}}
    if cls in CONFIG_FIELDS:
        return {"t": "obj", "cls": cls,
                "fields": {f: encode(getattr(v, f)) for f in CONFIG_FIELDS[cls] if hasattr(v, f)}}
    raise TypeError(f"corpus: cannot encode a {cls} argument")


def encode_call(op: str, args: tuple, kwargs: dict) -> dict:
    return {"op": op, "args": [encode(a) for a in args], "kwargs": {k: encode(v) for k, v in kwargs.items()}}


def call_key(call: dict) -> str:
    return json.dumps(call, sort_keys=True)


# ---------------- decoding (JSON -> objects of a given ttnn module) ----------------
def decode_mem(ttnn: Any, m: dict) -> Any:
    shard = None
    if m["shard"] is not None:
        s = m["shard"]
        shard = ttnn.ShardSpec(_decode_crs(ttnn, s["grid"]), list(s["shape"]),
                               getattr(ttnn.ShardOrientation, s["orientation"]))
    return ttnn.MemoryConfig(getattr(ttnn.TensorMemoryLayout, m["layout"]), getattr(ttnn.BufferType, m["buffer"]),
                             shard)


def _decode_crs(ttnn: Any, ranges: list[list[int]]) -> Any:
    return ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(a, b), ttnn.CoreCoord(c, d)) for a, b, c, d in ranges})


def _resolve(ttnn: Any, qual: str) -> Any:
    obj = ttnn
    for part in qual.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def make_tensor(ttnn: Any, device: Any, spec: dict) -> Any:
    """A tensor of the spec, filled with zeros (device tensors are allocated where the spec says)."""
    dtype = getattr(ttnn.DataType, spec["dtype"])
    layout = getattr(ttnn.Layout, spec["layout"])
    if spec["mem"] is None:
        host_dtype = torch.int32 if spec["dtype"] in ("INT32", "UINT32", "UINT16", "UINT8") else torch.float32
        return ttnn.from_torch(torch.zeros(spec["shape"], dtype=host_dtype), dtype, layout=layout)
    return ttnn.zeros(spec["shape"], dtype=dtype, layout=layout, device=device,
                      memory_config=decode_mem(ttnn, spec["mem"]))


def decode(ttnn: Any, device: Any, v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    t = v["t"]
    if t in ("list", "tuple"):
        items = [decode(ttnn, device, x) for x in v["v"]]
        return items if t == "list" else tuple(items)
    if t == "dict":
        return {k: decode(ttnn, device, x) for k, x in v["v"].items()}
    if t == "tensor":
        return make_tensor(ttnn, device, v)
    if t == "torch":
        return torch.zeros(v["shape"], dtype=_TORCH_DTYPES[v["dtype"]])
    if t == "device":
        return device
    if t == "mem":
        return decode_mem(ttnn, v)
    if t == "enum":
        cls, member = v["v"].split(".")
        return getattr(getattr(ttnn, cls), member)
    if t == "obj":
        cls, fields = v["cls"], v["fields"]
        if cls == "CoreRangeSet":
            return _decode_crs(ttnn, fields["ranges"])
        if cls == "UnaryWithParam":
            op = decode(ttnn, device, fields["op_type"])
            return ttnn.UnaryWithParam(op) if fields["param"] is None else ttnn.UnaryWithParam(op, fields["param"])
        kw = {k: decode(ttnn, device, x) for k, x in fields.items()}
        if cls in _POSITIONAL:
            return getattr(ttnn, cls)(*kw.values())
        return getattr(ttnn, cls)(**kw)
    raise ValueError(f"corpus: unknown encoded value {v!r}")


def run_call(ttnn: Any, device: Any, call: dict) -> dict:
    """Make the call; return its verdict and the specs of the tensors it returned.
    {"ok": True, "out": [spec, ...]} or {"ok": False, "error": "<first line of the message>"}."""
    try:
        args = [decode(ttnn, device, a) for a in call["args"]]
        kwargs = {k: decode(ttnn, device, x) for k, x in call["kwargs"].items()}
    except Exception as e:  # the inputs themselves cannot be built: part of the verdict
        return {"ok": False, "error": f"building inputs: {first_line(str(e))}", "stage": "inputs"}
    before = _allocated(ttnn, device)
    try:
        out = _resolve(ttnn, call["op"])(*args, **kwargs)
    except Exception as e:
        text = str(e)
        # The raw text up to the backtrace, for tests of the report parser (tests/checks/test_report.py).
        raw = text.split("backtrace:")[0] + ("backtrace:\n" if "backtrace:" in text else "")
        return {"ok": False, "error": first_line(text), "raw": raw[:4000]}
    outs = out if isinstance(out, (list, tuple)) else [out]
    after = _allocated(ttnn, device)
    return {"ok": True, "out": [encode(o) if type(o).__name__ == "Tensor" else None for o in outs],
            "alloc": {k: after[k] - before[k] for k in after}}


def _allocated(ttnn: Any, device: Any) -> dict[str, int]:
    """Bytes allocated per bank, DRAM and L1: the difference across a call is what its outputs hold."""
    return {bt: ttnn.get_memory_view(device, getattr(ttnn.BufferType, bt)).total_bytes_allocated_per_bank
            for bt in ("DRAM", "L1")}


def first_line(text: str) -> str:
    """The rule text of an error: TT_FATAL's info line, else the first line."""
    m = re.search(r"\ninfo:\n(.*?)(?:\nbacktrace:|$)", text, re.S)
    body = m.group(1) if m else text.split("backtrace:")[0]
    return " ".join(body.split())[:1000]
