"""Records the qualified names and parameters of the real ttnn 0.81.1 ops the simulator implements into
tests/ttnn_api_0.81.1.json (run under the real ttnn; see README.md here).

C++ ops are nanobind objects: their parameters are read from the generated `__call__(self, a: T, *, b: T = d)`
signature line(s) of the op's __call__ docstring, one list per overload (likewise for plain nanobind functions).
Python-level functions are read with inspect.signature. Classes record only that they exist.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import ttnn

OUT = Path(__file__).resolve().parents[2] / "tests" / "ttnn_api_0.81.1.json"

OPS = """
open_device close_device open_mesh_device close_mesh_device get_num_devices MeshShape ReplicateTensorToMesh
ShardTensorToMesh ConcatMeshToTensor from_torch to_torch as_tensor to_device from_device to_layout typecast reshape
permute slice concat deallocate copy_host_to_device_tensor embedding linear matmul add mul multiply silu softmax
rms_norm argmax topk sparse_matmul plus_one experimental.nlp_create_qkv_heads experimental.nlp_create_qkv_heads_decode
experimental.nlp_concat_heads experimental.nlp_concat_heads_decode experimental.rotary_embedding_llama
experimental.paged_fill_cache experimental.paged_update_cache experimental.paged_fused_update_cache
transformer.scaled_dot_product_attention
transformer.chunked_scaled_dot_product_attention transformer.paged_scaled_dot_product_attention_decode
begin_trace_capture end_trace_capture execute_trace release_trace WormholeComputeKernelConfig
init_device_compute_kernel_config create_sharded_memory_config MemoryConfig synchronize_device unsqueeze_to_4D
sharded_to_interleaved interleaved_to_sharded clone transpose zeros to_memory_config get_device_ids get_arch_name
empty fill fill_implicit_tile_padding get_golden_function get_memory_view num_cores_to_corerangeset
num_cores_to_corerangeset_in_subcoregrids Tile DispatchCoreConfig MeshCoordinate CoreCoord CoreRange CoreRangeSet
CoreGrid ShardSpec Tensor MatmulMultiCoreReuseProgramConfig MatmulMultiCoreReuseMultiCastProgramConfig
MatmulMultiCoreReuseMultiCast1DProgramConfig MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig SDPAProgramConfig
LayerNormShardedMultiCoreProgramConfig LayerNormDefaultProgramConfig UnaryWithParam
all_gather reduce_scatter all_reduce Topology FabricConfig FabricReliabilityMode FabricTensixConfig FabricUDMMode
FabricManagerMode set_fabric_config get_fabric_config create_global_semaphore reset_global_semaphore_value
experimental.all_gather_async experimental.reduce_scatter_minimal_async experimental.all_reduce_async ReduceType
sampling manual_seed record_event wait_for_event event_synchronize MeshEvent sub subtract gt ge eq exp log sum
rms_norm_pre_all_gather rms_norm_post_all_gather scale_mask_softmax scale_mask_softmax_in_place softmax_in_place
SoftmaxDefaultProgramConfig SoftmaxShardedMultiCoreProgramConfig
""".split()
CONSTANTS = """
TILE_LAYOUT ROW_MAJOR_LAYOUT bfloat16 float32 uint32 int32 bfloat8_b bfloat4_b DRAM_MEMORY_CONFIG L1_MEMORY_CONFIG
MathFidelity.LoFi MathFidelity.HiFi2 MathFidelity.HiFi3 MathFidelity.HiFi4 UnaryOpType.SILU TILE_SIZE
DispatchCoreAxis.ROW DispatchCoreAxis.COL DispatchCoreType.WORKER DispatchCoreType.ETH StorageType.HOST
StorageType.DEVICE BufferType.DRAM BufferType.L1 TensorMemoryLayout.INTERLEAVED TensorMemoryLayout.HEIGHT_SHARDED
TensorMemoryLayout.WIDTH_SHARDED TensorMemoryLayout.BLOCK_SHARDED ShardOrientation.ROW_MAJOR ShardOrientation.COL_MAJOR
ShardStrategy.HEIGHT ShardStrategy.WIDTH ShardStrategy.BLOCK L1_HEIGHT_SHARDED_MEMORY_CONFIG
L1_WIDTH_SHARDED_MEMORY_CONFIG L1_BLOCK_SHARDED_MEMORY_CONFIG uint16 uint8 int8 fp8_e4m3
Topology.Linear Topology.Ring Topology.Mesh Topology.Torus FabricConfig.DISABLED FabricConfig.FABRIC_1D
FabricConfig.FABRIC_1D_RING FabricConfig.FABRIC_1D_NEIGHBOR_EXCHANGE FabricConfig.FABRIC_2D
FabricConfig.FABRIC_2D_TORUS_X
FabricConfig.FABRIC_2D_TORUS_Y FabricConfig.FABRIC_2D_TORUS_XY FabricConfig.CUSTOM FabricReliabilityMode.STRICT_INIT
FabricReliabilityMode.RELAXED_INIT FabricTensixConfig.DISABLED FabricTensixConfig.MUX ReduceType.Sum
""".split()
# Methods and properties real callers use on the objects ops return (recorded as present or not).
METHODS = {
    "MeshDevice": """compute_with_storage_grid_size dram_grid_size core_grid get_num_devices get_device_ids arch shape
                     enable_program_cache disable_and_clear_program_cache clear_program_cache
                     num_program_cache_entries set_program_cache_misses_allowed create_submeshes""".split(),
    "Tensor": """shape logical_shape padded_shape dtype layout memory_config storage_type is_sharded to cpu reshape
                 device is_allocated volume get_dtype get_layout""".split(),
    "Tile": "tile_shape face_shape num_faces get_tile_size partial_face narrow_tile".split(),
    "MeshShape": "mesh_size dims".split(),
    "MeshCoordinate": ["dims"],
    "DispatchCoreConfig": ["type", "axis"],
}


def resolve(path: str):
    obj = ttnn
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def split_top(s: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def from_nanobind_doc(doc: str, name: str) -> list[list[dict]]:
    """One parameter list per overload signature line `name(a: T, *, b: T = d) -> R`."""
    overloads = []
    for m in re.finditer(rf"^\s*(?:\d+\.\s*)?{re.escape(name)}\((.*?)\) -> ", doc, flags=re.S | re.M):
        params, kw_only = [], False
        for p in split_top(m.group(1)):
            p = p.replace("\\*", "*")  # some docstrings escape the bare star for Sphinx
            if p == "self":
                continue
            if p == "*":
                kw_only = True
                continue
            pname = re.split(r"[:=]", p, maxsplit=1)[0].strip()
            kind = "var_keyword" if pname.startswith("**") else "var_positional" if pname.startswith("*") else None
            kind = kind or ("keyword_only" if kw_only else "positional_or_keyword")
            params.append({"name": pname.lstrip("*"), "kind": kind, "required": "=" not in p})
        overloads.append(params)
    return overloads


def from_signature(fn) -> list[dict]:
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "positional_or_keyword",
             inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
             inspect.Parameter.KEYWORD_ONLY: "keyword_only",
             inspect.Parameter.VAR_POSITIONAL: "var_positional",
             inspect.Parameter.VAR_KEYWORD: "var_keyword"}
    return [{"name": p.name, "kind": kinds[p.kind], "required": p.default is inspect.Parameter.empty
             and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)} for p in inspect.signature(fn).parameters.values()]


def describe(obj) -> dict:
    if obj is None:
        return {"exists": False}
    if inspect.isclass(obj):
        return {"exists": True, "kind": "class"}
    fn = getattr(obj, "function", obj)  # ttnn's FastOperation wraps the op in .function
    call_doc = getattr(type(fn).__call__, "__doc__", "") or ""
    if "__call__(" in call_doc:  # a nanobind op object
        return {"exists": True, "kind": "cpp_op", "overloads": from_nanobind_doc(call_doc, "__call__")}
    try:
        return {"exists": True, "kind": "python_function", "overloads": [from_signature(fn)]}
    except (TypeError, ValueError):
        pass
    name = getattr(fn, "__name__", "")
    overloads = from_nanobind_doc(getattr(fn, "__doc__", "") or "", name) if name else []
    return {"exists": True, "kind": "cpp_function", "overloads": overloads} if overloads else {"exists": True}


def main() -> None:
    record = {
        "ttnn_version": "0.81.1",
        "ops": {f"ttnn.{name}": describe(resolve(name)) for name in OPS},
        "constants": {f"ttnn.{name}": {"exists": resolve(name) is not None, "repr": repr(resolve(name))}
                      for name in CONSTANTS},
        "methods": {f"ttnn.{cls}.{m}": {"exists": hasattr(resolve(cls), m)} for cls, ms in METHODS.items()
                    for m in ms},
    }
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    missing = [k for k, v in record["ops"].items() if not v["exists"]]
    print(f"wrote {OUT}; not in real ttnn: {missing}")


if __name__ == "__main__":
    main()
