"""Cache-state invariance of prefill (additional_config tt.cache_invariant_prefill) on the simulator: what it fixes
and what it costs. Prints JSON (--out writes it).

For random prompts, the last-token logits of a cold prefill are compared with those of a prefill continuing from
each cached block boundary (the cache as the cold prefill left it), with the model's default chunking (one chunk up
to max_prefill_chunk) and with block-sized chunks (the mode): how many continuations give the cold logits bit for
bit. Then the prefill time of one prompt per length, both ways (best of --repeats): the mode runs a prompt of n
tokens as n / block_size chunks, each padded to the 128-token minimum bucket on the simulator; on hardware the cost
is the smaller, less efficient matmuls and one chunked SDPA per block.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch
from bench_json import emit  # a sibling: scripts run with benchmarks/ first on sys.path

os.environ.setdefault("TT_BACKEND", "sim")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model directory (default: the installed SmolLM2)")
    p.add_argument("--profile", default="performance")
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--prompts", default="90,253,330,500", help="token counts of the invariance prompts")
    p.add_argument("--timed", default="512,1024", help="token counts of the timed prefills")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    from transformers import AutoConfig

    from generator_vllm import TT_CLASSES
    from tt_models.backend import get_ttnn
    from tt_models.checkpoint import default_model_dir

    ttnn = get_ttnn()
    path = a.model or str(default_model_dir())
    cfg = AutoConfig.from_pretrained(path)
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
    lengths, timed = [int(x) for x in a.prompts.split(",")], [int(x) for x in a.timed.split(",")]
    max_len = max(lengths + timed)
    model = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(cfg, mesh, 1, max_len + a.block,
                                                                   optimizations=a.profile, model_path=path)
    args = model.model.args
    width = -(-max_len // a.block)
    kv = model.allocate_kv_cache((width + 1, args.n_kv_heads, a.block, args.head_dim), torch.bfloat16, args.n_layers)
    table = torch.arange(1, width + 1, dtype=torch.int32).reshape(1, width)
    default_chunk = model.max_prefill_chunk
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, cfg.vocab_size, (1, n), generator=g, dtype=torch.int32) for n in lengths]
    timed_prompts = [torch.randint(0, cfg.vocab_size, (1, n), generator=g, dtype=torch.int32) for n in timed]
    result: dict[str, Any] = {"model": path, "profile": a.profile, "block_size": a.block, "modes": {}}
    for mode, chunk in (("default", default_chunk), ("cache_invariant_prefill", a.block)):
        model.max_prefill_chunk = chunk
        same = total = 0
        for toks in prompts:
            n = toks.shape[1]
            cold = model.prefill_forward(toks, table, kv, [n])[0, 0]
            for start in range(a.block, n, a.block):
                warm = model.prefill_forward(toks, table, kv, [n], start_pos=[start])[0, 0]
                same += int(torch.equal(cold, warm))
                total += 1
        seconds = {}
        for toks in timed_prompts:
            n = toks.shape[1]
            best = float("inf")
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                model.prefill_forward(toks, table, kv, [n])
                best = min(best, time.perf_counter() - t0)
            seconds[str(n)] = round(best, 3)
        result["modes"][mode] = {"max_prefill_chunk": chunk, "cached_continuations_bit_identical": same,
                                 "cached_continuations": total, "prefill_s": seconds}
    d, m = result["modes"]["default"]["prefill_s"], result["modes"]["cache_invariant_prefill"]["prefill_s"]
    result["prefill_cost_ratio"] = {n: round(m[n] / d[n], 2) for n in d}
    ttnn.close_mesh_device(mesh)
    emit(result, a.out)


if __name__ == "__main__":
    main()
