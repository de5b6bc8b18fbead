"""Speculative decoding (n-gram drafts, and with --draft a draft model) through vLLM on the simulator, with and
without. Prints JSON (--out writes it).

Two workloads of greedy requests: `copyable` (code to edit and quotes to summarise, text the output repeats: what
n-gram drafts exist for) and `fresh` (questions whose answers copy nothing). For each, engines with and without
`--speculative-config ngram` report:
- tokens/s on the simulator (wall time of LLM.generate),
- model steps per generated token of a request (after its prompt's): decode steps without speculation (one per
  token), decode plus verify steps with it (a verify step gives each request 1 + its accepted drafts), counted by
  the runner;
- a request's own steps per token (each verify step gives it 1 + the drafts it accepted): the engine's steps above
  follow the batch's slowest request, while in a serving mix a finished request's rows go to new ones;
- device replays per token: a verify step of B requests with k drafts takes ceil(B (k + 1) / 32) replays of the
  decode-sized trace (vllm_patches/spec_decode.py), which is what a memory-bound device spends per step;
- vLLM's acceptance rate (accepted / proposed draft tokens) and mean accepted length (1 + accepted / drafts);
- with a draft model, its decode passes per token (each reads the draft's weights once on a device).
The simulator's paged decode attention costs in proportion to the live rows (a verify step of 8 requests with 3
drafts has 32, a decode step 8), so its tokens/s fall at batch > 1; a device runs the 32 rows on 32 cores at once
and is bound by reading the weights once per replay, so replays (and a request's steps) per token are the speed-up's
measure there.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench_json import emit  # a sibling: scripts run with benchmarks/ first on sys.path

os.environ.setdefault("TT_BACKEND", "sim")
os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc returning the runner's step counts

COPYABLE = [
    "Rename the variable `total` to `acc` in this code and show the whole result:\n\n"
    "def sum_list(xs):\n    total = 0\n    for x in xs:\n        total = total + x\n    return total\n\n"
    "def mean(xs):\n    total = sum_list(xs)\n    return total / len(xs)\n",
    "Summarize the passage, quoting it where you can:\n\n\"The committee met on Tuesday and agreed that the new "
    "bridge would open in March. The committee also agreed that the old bridge would close in April, and that "
    "traffic would use the new bridge from then on.\"\n",
    "Repeat this list exactly, then add one item:\n- apples\n- pears\n- plums\n- cherries\n- figs\n- dates\n",
    "Fix the typo and print the corrected code:\n\nfor i in range(10):\n    prnt(i)\nfor j in range(10):\n"
    "    print(j)\n",
]
FRESH = ["What is the capital of France?", "Give me three ideas for a birthday party.",
         "Explain why the sky is blue.", "Write a haiku about winter."]


def counters(engine: Any) -> dict[str, float]:
    """vLLM's spec-decode counters, and the runner's step counts (read from the engine core's worker)."""
    out: dict[str, float] = {}
    for m in engine.get_metrics():
        if m.name in ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                      "vllm:spec_decode_num_accepted_tokens"):
            out[m.name] = out.get(m.name, 0) + float(m.value)

    def steps(worker: Any) -> tuple[int, int, int, int]:
        r = worker.model_runner
        draft = r.spec.draft if r.spec else None
        return (r.decode_steps, r.spec.verify_steps if r.spec else 0, r.spec.verify_replays if r.spec else 0,
                draft.passes if draft else 0)

    out["decode"], out["verify"], out["replays"], out["draft_passes"] = engine.collective_rpc(steps)[0]
    return out


def run(engine: Any, prompts: list[str], tokens: int, batch: int, k: int) -> dict[str, Any]:
    from vllm import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    engine.generate(prompts[:1], SamplingParams(temperature=0, max_tokens=4))  # warm: captures the traces
    before = counters(engine)
    work = [prompts[i % len(prompts)] for i in range(batch)]
    t0 = time.perf_counter()
    outs = engine.generate(work, params)
    wall = time.perf_counter() - t0
    after = counters(engine)
    d = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    generated = sum(len(o.outputs[0].token_ids) for o in outs)
    drafts, proposed = d.get("vllm:spec_decode_num_drafts", 0), d.get("vllm:spec_decode_num_draft_tokens", 0)
    accepted = d.get("vllm:spec_decode_num_accepted_tokens", 0)
    steps = d["decode"] + d["verify"]  # model steps after the prefills (whose first tokens are not counted)
    replays = d["decode"] + d["replays"]
    per_request = tokens - 1
    # A request's own steps after its prompt: each gives it 1 + the drafts it accepted. The engine's steps are the
    # batch's slowest request's (a request that finishes early leaves its rows to others in a serving mix).
    request_steps = (generated - batch - accepted) / batch
    return {"tokens_per_s": generated / wall, "generated": generated, "model_steps": steps,
            "model_steps_per_token": steps / per_request, "device_replays": replays,
            "device_replays_per_token": replays / per_request,
            "request_steps_per_token": request_steps / per_request,
            "draft_tokens": proposed, "accepted_tokens": accepted,
            "acceptance_rate": accepted / proposed if proposed else None,
            "mean_accepted_length": 1 + accepted / drafts if drafts else None,
            "draft_passes_per_token": d["draft_passes"] / per_request,
            "outputs": [list(o.outputs[0].token_ids) for o in outs]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model directory (default: the installed SmolLM2)")
    p.add_argument("--profile", default="performance")
    p.add_argument("--k", type=int, default=3, help="num_speculative_tokens")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--batches", default="1,8")
    p.add_argument("--draft", default=None, help="a draft model directory (same tokenizer): runs it too")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    from vllm import LLM

    from tt_models.checkpoint import default_model_dir

    model = a.model or str(default_model_dir())
    spec = {"method": "ngram", "num_speculative_tokens": a.k, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    batches = [int(b) for b in a.batches.split(",")]
    result: dict[str, Any] = {"model": model, "draft": a.draft, "profile": a.profile, "k": a.k, "tokens": a.tokens,
                              "runs": {}}
    engines = [("plain", {}), ("ngram", {"speculative_config": spec})]
    if a.draft:
        engines.append(("draft", {"speculative_config": {"model": a.draft, "num_speculative_tokens": a.k}}))
    for name, extra in engines:
        engine = LLM(model=model, max_num_seqs=max(batches), max_model_len=1024, block_size=64, seed=0,
                     disable_log_stats=False, additional_config={"tt": {"optimizations": a.profile}}, **extra)
        for workload, prompts in (("copyable", COPYABLE), ("fresh", FRESH)):
            for b in batches:
                result["runs"][f"{name}/{workload}/b{b}"] = run(engine, prompts, a.tokens, b, a.k)
        engine.llm_engine.engine_core.shutdown()
        del engine
    for key, r in result["runs"].items():
        if not key.startswith("plain/"):
            plain = result["runs"]["plain/" + key.split("/", 1)[1]]
            r["same_tokens_as_plain"] = r["outputs"] == plain["outputs"]
            r["speedup_sim"] = r["tokens_per_s"] / plain["tokens_per_s"]
            r["speedup_replays"] = plain["device_replays_per_token"] / r["device_replays_per_token"]
            r["speedup_request_steps"] = plain["request_steps_per_token"] / r["request_steps_per_token"]
    for r in result["runs"].values():
        del r["outputs"]
    emit(result, a.out)


if __name__ == "__main__":
    main()
