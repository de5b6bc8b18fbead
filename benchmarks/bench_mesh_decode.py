"""Simulator cost of decode on a mesh. Prints JSON.

`tp`: the same model's traced decode step at batch 32 on a 1x1 mesh and on 1x2 / 1x8 meshes (T3K's row), tensor
parallel, and on a 2x4 mesh split two ways (the Galaxy split), and the ratio of each to 1x1. The simulator runs
every chip's share of every op on the host's CPU, one chip after the other, plus the collectives, so the ratio says
what simulating a mesh costs (it must stay usable in CI), not what a mesh gains on hardware, where each chip does
1/N of the matmul work in parallel.

`dp`: the host-side cost per decode step of data parallel at total batch 128 (tt_data_parallel=4 on a 1x4 mesh, 32
users per replica): the whole step, the replicas' own decode_forward calls inside it, and the difference, which is
the DataParallel wrapper's splitting of the inputs and sampling parameters and gathering of the outputs; and the
step of one replica alone (`dp1_step_ms`, 32 users) with the ratio of the N-replica step to it.

The model is a random Llama of 8 heads (so that 8 chips split it) built with transformers and saved once to a temp
folder; the default `performance` profile (bfloat8_b weights and KV cache).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from bench_timing import Timed  # a sibling: scripts run with benchmarks/ first on sys.path

os.environ.setdefault("TT_BACKEND", "sim")

from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig  # noqa: E402

from generator_vllm import TT_CLASSES, TTLlamaForCausalLM  # noqa: E402
from tt_models.backend import ttnn  # noqa: E402

BLOCK = 64
MAX_SEQ = 512


def make_model(root: Path, hidden: int, layers: int, vocab: int) -> Path:
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                      tie_word_embeddings=False)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).save_pretrained(root, safe_serialization=True)
    return root


class Mesh:
    """An open simulated mesh (the 1-D fabric on more than one chip, as the vLLM worker opens it)."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.multi = shape != (1, 1)
        if self.multi:
            ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
        self.dev = ttnn.open_mesh_device(ttnn.MeshShape(*shape), trace_region_size=1 << 26)

    def __enter__(self) -> Any:
        return self.dev

    def __exit__(self, *exc: Any) -> None:
        ttnn.close_mesh_device(self.dev)
        if self.multi:
            ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


def decode_inputs(tt: Any, batch: int, context: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list]:
    a = tt.model.args
    width = MAX_SEQ // BLOCK
    # Data parallel: each replica has its own share of the block ids (its users' blocks and an unused block 0).
    replicas = len(getattr(tt, "replicas", [tt]))
    users = batch // replicas
    per = users * width + 1
    kv = tt.allocate_kv_cache((per * replicas, tt.kv_cache_heads, BLOCK, a.head_dim), torch.bfloat16, a.n_layers)
    row = torch.arange(batch, dtype=torch.int32)[:, None]
    table = row // users * per + row % users * width + 1 + torch.arange(width, dtype=torch.int32)
    tokens = torch.randint(0, a.vocab_size, (batch, 1), dtype=torch.int32)
    pos = torch.full((batch,), context, dtype=torch.int32)
    return tokens, pos, table, kv


def tp_step_s(path: Path, shape: tuple[int, int], profile: str, batch: int, context: int, steps: int) -> float:
    """Seconds per traced decode step of `batch` users at `context` on a mesh of `shape`, tensor parallel (the
    checkpoint's own generation class: MoE models split their experts over the chips)."""
    cfg = AutoConfig.from_pretrained(path)
    with Mesh(shape) as mesh:
        tt = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, max_batch_size=batch,
                                                                   max_seq_len=MAX_SEQ, optimizations=profile,
                                                                   model_path=path)
        tokens, pos, table, kv = decode_inputs(tt, batch, context)
        tt.decode_forward(tokens, pos, table, kv)  # compile + capture
        t0 = time.perf_counter()
        for _ in range(steps):
            pos += 1
            tt.decode_forward(tokens, pos, table, kv)
        took = (time.perf_counter() - t0) / steps
        tt.release()
        return took


def dp_step(path: Path, replicas: int, profile: str, per_replica: int, context: int, steps: int) -> dict:
    """The DP wrapper's host cost per step: whole step minus the replicas' own decode_forward calls."""
    with Mesh((1, replicas)) as mesh:
        batch = replicas * per_replica
        dp = TTLlamaForCausalLM.initialize_vllm_model(LlamaConfig.from_pretrained(path), mesh,
                                                      max_batch_size=batch, max_seq_len=MAX_SEQ,
                                                      optimizations=profile, model_path=path,
                                                      tt_data_parallel=replicas)
        tokens, pos, table, kv = decode_inputs(dp, batch, context)
        members = getattr(dp, "replicas", [dp])  # one replica: the generation class itself, no wrapper
        inner = [Timed(r.decode_forward) for r in members]  # each replica's own call, inside the wrapper's step
        for r, timed in zip(members, inner, strict=True):
            r.decode_forward = timed
        dp.decode_forward(tokens, pos, table, kv)  # compile + capture on every replica
        for timed in inner:
            timed.seconds = 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            pos += 1
            dp.decode_forward(tokens, pos, table, kv)
        whole = (time.perf_counter() - t0) / steps
        dp.release()
    replicas_s = sum(timed.seconds for timed in inner) / steps
    return {"dp_total_batch": batch, "dp_replicas": replicas, "dp_step_ms": round(1000 * whole, 2),
            "dp_replicas_decode_ms": round(1000 * replicas_s, 2),
            "dp_split_gather_host_ms": round(1000 * (whole - replicas_s), 3)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", nargs="?", choices=("tp", "dp", "all"), default="all")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--batch", type=int, default=32, help="users per chip (tp) or per replica (dp)")
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--profile", default="performance")
    p.add_argument("--meshes", default="1x1,1x2,1x8,2x4", help="tp: the meshes to compare with 1x1")
    p.add_argument("--replicas", type=int, default=4, help="dp: replicas (total batch = replicas x batch)")
    args = p.parse_args()
    out: dict[str, Any] = {"model": f"llama hidden {args.hidden}, {args.layers} layers, 8 heads, vocab {args.vocab}",
                           "profile": args.profile, "context": args.context}
    with tempfile.TemporaryDirectory(prefix="bench_mesh_") as tmp:
        path = make_model(Path(tmp), args.hidden, args.layers, args.vocab)
        if args.part in ("tp", "all"):
            shapes = [tuple(int(x) for x in m.split("x")) for m in args.meshes.split(",")]
            times = {f"{r}x{c}": tp_step_s(path, (r, c), args.profile, args.batch, args.context, args.steps)
                     for r, c in shapes}
            out.update({"tp_batch": args.batch, **{f"tp_decode_step_ms_{k}": round(1000 * v, 2)
                                                  for k, v in times.items()}})
            if "1x1" in times:
                out.update({f"tp_ratio_{k}_over_1x1": round(v / times["1x1"], 3)
                            for k, v in times.items() if k != "1x1"})
        if args.part in ("dp", "all"):
            out.update(dp_step(path, args.replicas, args.profile, args.batch, args.context, args.steps))
            # The same step with one replica: on the simulator the replicas run one after another on the host, so
            # the ratio is about N; on hardware every replica's trace is enqueued before any read
            # (DataParallel.decode_forward), and the devices run at once.
            one = dp_step(path, 1, args.profile, args.batch, args.context, args.steps)
            out.update({"dp1_step_ms": one["dp_step_ms"],
                        f"dp_ratio_{args.replicas}_over_1": round(out["dp_step_ms"] / one["dp_step_ms"], 3)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
