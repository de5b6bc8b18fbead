"""vLLM + TT plugin vs driving the generation class directly, and the TTModelRunner's own host time per step.

    python benchmarks/bench_vllm_plugin.py throughput   # 32 prompts x 64 tokens both ways, same run (target >= 0.9)
    python benchmarks/bench_vllm_plugin.py runner       # host ms per decode step at batch 1/8/32 and several
                                                        # page-table widths (target <= 0.5 ms at batch 32)
    python benchmarks/bench_vllm_plugin.py sampling [STEPS]  # host ms per decode step at batch 32 of temperature /
                                                        # top-k / top-p requests: sampled on device vs on the host
    python benchmarks/bench_vllm_plugin.py generator [B] [CTX] [STEPS]
                                                        # host ms per traced decode step of the generation class
                                                        # (SmolLM2, batch B=32): decode_forward outside execute_trace
    python benchmarks/bench_vllm_plugin.py itl [TOKENS] # inter-token latency of 7 running requests while a
                                                        # TOKENS-long prompt (4096) is prefilled, chunked vs whole
    python benchmarks/bench_vllm_plugin.py async [P] [T]   # decode throughput of P prompts (32) x T tokens (64),
                                                        # sampled on device, with async scheduling vs without
Prints JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch
from bench_timing import Timed  # a sibling: scripts run with benchmarks/ first on sys.path

os.environ.setdefault("TT_BACKEND", "sim")

PROMPTS, TOKENS = 32, 64


def prompts(n: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    return [torch.randint(100, 40000, (int(torch.randint(20, 60, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


def throughput() -> dict:
    from transformers import AutoConfig
    from vllm import LLM, SamplingParams, TokensPrompt

    from generator_vllm import TTLlamaForCausalLM
    from tt_models.backend import ttnn
    from tt_models.checkpoint import default_model_dir

    path = str(default_model_dir())
    ids = prompts(PROMPTS)
    # Direct: the generation class, all prompts prefilled then decoded together as one batch.
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 26)
    tt = TTLlamaForCausalLM.initialize_vllm_model(AutoConfig.from_pretrained(path), dev, PROMPTS, 512)
    a = tt.model.args
    width = 512 // 64
    kv = tt.allocate_kv_cache((PROMPTS * width + 1, a.n_kv_heads, 64, a.head_dim), torch.bfloat16, a.n_layers)
    table = (torch.arange(PROMPTS * width) + 1).reshape(PROMPTS, width).to(torch.int32)
    tt.warmup_model_decode(kv, True, PROMPTS, width)
    t0 = time.perf_counter()
    tokens = torch.zeros(PROMPTS, max(map(len, ids)), dtype=torch.int32)
    for i, p in enumerate(ids):
        tokens[i, : len(p)] = torch.tensor(p)
    nxt = tt.prefill_forward(tokens, table, kv, [len(p) for p in ids])[:, 0].argmax(-1).to(torch.int32)
    pos = torch.tensor([len(p) for p in ids], dtype=torch.int32)
    for _ in range(TOKENS - 1):
        nxt = tt.decode_forward(nxt[:, None], pos, table, kv)[:, 0].argmax(-1).to(torch.int32)
        pos += 1
    direct = PROMPTS * TOKENS / (time.perf_counter() - t0)
    tt.release()
    ttnn.close_mesh_device(dev)

    llm = LLM(model=path, max_num_seqs=PROMPTS, max_model_len=512, block_size=64)
    params = SamplingParams(temperature=0, max_tokens=TOKENS, ignore_eos=True)
    llm.generate([TokensPrompt(prompt_token_ids=ids[0])], SamplingParams(max_tokens=2))
    t0 = time.perf_counter()
    llm.generate([TokensPrompt(prompt_token_ids=p) for p in ids], params)
    via_vllm = PROMPTS * TOKENS / (time.perf_counter() - t0)
    llm.llm_engine.engine_core.shutdown()
    return {"benchmark": "vllm_vs_generation_class", "prompts": PROMPTS, "tokens": TOKENS,
            "direct_tok_s": round(direct, 2), "vllm_tok_s": round(via_vllm, 2),
            "ratio_vllm_over_direct": round(via_vllm / direct, 3), "target_ratio": 0.9}


class _InstantModel:
    """Stands in for the device so only host work is timed: the runner's, and with device sampling the generation
    class's conversion of the per-user parameters into the op's k / p / 1/T vectors."""

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab
        # Spread-out logits, as a model's are: vLLM's top-k / top-p work depends on them (all-equal ones are a
        # degenerate worst case for its sort).
        self.logits = torch.randn(1, 1, vocab, generator=torch.Generator().manual_seed(0)) * 3

    def decode_forward(self, tokens: torch.Tensor, start_pos: torch.Tensor, page_table: torch.Tensor,
                       sampling_params: object = None, **_: object):
        from tt_models.layers.sampling import device_params
        from tt_models.sampling import per_user_lists, sampling_mode

        if sampling_params is None:
            return self.logits.expand(tokens.shape[0], 1, self.vocab).clone()
        if sampling_mode(sampling_params) == "sample":
            device_params(*per_user_lists(sampling_params, tokens.shape[0])[:3])
        return torch.zeros(tokens.shape[0], dtype=torch.int64)


def runner_host_time(batch: int, context: int, steps: int = 50, params: object = None,
                     on_device: str | None = None) -> tuple[float, float]:
    """(ms per decode step of the whole runner, ms of that spent in vLLM's Sampler on the same logits)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.sampling_params import SamplingParams
    from vllm.v1.core.sched.output import CachedRequestData, SchedulerOutput
    from vllm.v1.worker.gpu_input_batch import CachedRequestState

    from tt_models.checkpoint import default_model_dir
    from vllm_patches.model_runner import TTModelRunner
    from vllm_patches.tt_config import TTConfig

    cfg = EngineArgs(model=str(default_model_dir()), max_num_seqs=batch, max_model_len=context,
                     block_size=64).create_engine_config()
    runner = TTModelRunner(cfg, TTConfig(sample_on_device_mode=on_device))
    runner.model = _InstantModel(runner.vocab_size)
    bs = runner.block_size
    for i in range(batch):
        n = 100 + i
        state = CachedRequestState(
            req_id=f"r{i}", prompt_token_ids=list(range(n)), mm_features=[],
            sampling_params=params or SamplingParams(temperature=0, max_tokens=10_000), generator=None,
            block_ids=([1 + i * runner.width + j for j in range(-(-n // bs) + 1)],), num_computed_tokens=n,
            output_token_ids=[], lora_request=None)
        runner.requests[state.req_id] = state
        runner.input_batch.add_request(state)
    req_ids = [f"r{i}" for i in range(batch)]

    def step() -> None:
        computed = [len(runner.requests[r].prompt_token_ids) + len(runner.requests[r].output_token_ids)
                    for r in req_ids]
        so = SchedulerOutput.make_empty()
        so.scheduled_cached_reqs = CachedRequestData(
            req_ids=req_ids, resumed_req_ids=set(), new_token_ids=[], all_token_ids={},
            new_block_ids=[None] * batch, num_computed_tokens=computed, num_output_tokens=[0] * batch)
        so.num_scheduled_tokens = {r: 1 for r in req_ids}
        so.total_num_scheduled_tokens = batch
        runner.execute_model(so)
        runner.sample_tokens(None)

    for _ in range(3):
        step()
    # vLLM's Sampler timed where the runner calls it, in the same steps, so its share is part of the total.
    sampler = runner.sampler = Timed(runner.sampler)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    total = (time.perf_counter() - t0) / steps * 1e3
    runner.sampler = sampler.fn
    return total, sampler.seconds / steps * 1e3


def generator_host_time(batch: int = 32, context: int = 2048, steps: int = 20) -> dict:
    """Host ms per traced decode step of the generation class on SmolLM2 (performance profile): the time
    decode_forward takes outside ttnn.execute_trace, which is where the simulator does the device's work. That is
    the host's share on a device: building and copying the step's inputs (tokens, positions, page table, the
    per-user sampling vectors), launching the trace, and reading the result back."""
    from transformers import AutoConfig

    from generator_vllm import TTLlamaForCausalLM
    from tt_models.backend import get_ttnn, ttnn
    from tt_models.checkpoint import default_model_dir
    from tt_models.sampling import TTSamplingParams

    path = str(default_model_dir())
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 26)
    tt = TTLlamaForCausalLM.initialize_vllm_model(AutoConfig.from_pretrained(path), dev, batch, context,
                                                  optimizations="performance")
    a, bs = tt.model.args, 64
    width = context // bs
    kv = tt.allocate_kv_cache((batch * width + 1, a.n_kv_heads, bs, a.head_dim), torch.bfloat16, a.n_layers)
    table = (torch.arange(batch * width) + 1).reshape(batch, width).to(torch.int32)
    modes = {"logits": None, "device_greedy": TTSamplingParams(temperature=[0.0] * batch, top_k=[1] * batch,
                                                                top_p=[1.0] * batch),
             "device_sampling": TTSamplingParams(temperature=[0.8] * batch, top_k=[32] * batch,
                                                 top_p=[0.9] * batch)}
    tt.warmup_model_decode(kv, True, batch, width, sampling_params=list(modes.values()))
    backend = get_ttnn()  # the module the model's calls resolve to
    execute = Timed(backend.execute_trace)
    result = {"benchmark": "generation_class_host_ms_per_traced_decode_step", "batch": batch, "context": context,
              "profile": "performance", "target_ms_device_sampling": 0.5}
    backend.execute_trace = execute
    try:
        for name, params in modes.items():
            tokens = torch.randint(100, 40000, (batch, 1), dtype=torch.int32)
            pos = torch.arange(100, 100 + batch, dtype=torch.int32)
            tt.decode_forward(tokens, pos, table, kv, sampling_params=params)
            execute.seconds = 0.0
            t0 = time.perf_counter()
            for _ in range(steps):
                tt.decode_forward(tokens, pos, table, kv, sampling_params=params)
                pos += 1
            total = (time.perf_counter() - t0) / steps * 1e3
            in_trace = execute.seconds / steps * 1e3
            result[name] = {"host_ms": round(total - in_trace, 3), "device_ms_simulated": round(in_trace, 3)}
    finally:
        backend.execute_trace = execute.fn
        tt.release()
        ttnn.close_mesh_device(dev)
    return result


def sampling_host_time(steps: int = 50) -> dict:
    """Batch 32 of temperature 0.8 / top-k 32 / top-p 0.9 requests: host ms per decode step when the device samples
    (only 32 token ids come back) vs when vLLM's Sampler does it on the host from the full logits."""
    from vllm.sampling_params import SamplingParams

    params = SamplingParams(temperature=0.8, top_k=32, top_p=0.9, max_tokens=10_000)
    device_total, _ = runner_host_time(32, 2048, steps, params=params, on_device="decode_only")
    host_total, sampler = runner_host_time(32, 2048, steps, params=params)
    return {"benchmark": "tt_model_runner_sampling_host_ms_per_decode_step", "batch": 32,
            "params": "temperature=0.8 top_k=32 top_p=0.9", "target_ms_device": 0.5,
            "device_sampling": round(device_total, 3), "host_sampling": round(host_total, 3),
            "host_sampler_alone": round(sampler, 3),
            "note": "device: runner + parameter conversion; the device's own topk/sampling time is not host work"}


def itl_during_long_prefill(prompt_tokens: int = 4096, budget: int = 512) -> dict:
    """Wall-time gaps between consecutive tokens of 7 decoding requests while a long prompt arrives and is
    prefilled: whole in one step (budget >= prompt) vs in chunks of `budget` tokens with decode steps between."""
    from vllm import LLM, SamplingParams, TokensPrompt

    from tt_models.checkpoint import default_model_dir

    path = str(default_model_dir())
    short = prompts(7)
    long_ids = torch.randint(100, 40000, (prompt_tokens,), generator=torch.Generator().manual_seed(1)).tolist()
    result: dict = {"benchmark": "itl_during_long_prefill", "prompt_tokens": prompt_tokens, "running": 7}
    for name, tokens in (("whole", None), ("chunked", budget)):
        kw = {"max_num_batched_tokens": tokens} if tokens else {}
        llm = LLM(model=path, max_num_seqs=8, max_model_len=prompt_tokens + 128, block_size=64,
                  enable_prefix_caching=False, **kw)
        engine = llm.llm_engine
        params = SamplingParams(temperature=0, max_tokens=60, ignore_eos=True)
        for i, p in enumerate(short):
            engine.add_request(f"s{i}", TokensPrompt(prompt_token_ids=p), params)
        seen, last, gaps, added = {}, {}, [], False
        while engine.has_unfinished_requests():
            outs = engine.step()
            now = time.perf_counter()
            for out in outs:
                n = len(out.outputs[0].token_ids)
                if out.request_id.startswith("s") and n > seen.get(out.request_id, 0):
                    if out.request_id in last and added:
                        gaps.append((now - last[out.request_id]) * 1e3)
                    seen[out.request_id], last[out.request_id] = n, now
            if not added and len(seen) == 7 and min(seen.values()) >= 5:
                engine.add_request("long", TokensPrompt(prompt_token_ids=long_ids),
                                   SamplingParams(temperature=0, max_tokens=2))
                added = True
        llm.llm_engine.engine_core.shutdown()
        g = torch.tensor(gaps)
        result[name] = {"itl_p50_ms": round(float(g.quantile(0.5)), 1), "itl_p99_ms": round(float(g.quantile(0.99)), 1),
                        "itl_max_ms": round(float(g.max()), 1), "budget": tokens or prompt_tokens + 128}
    return result


def async_vs_sync(n_prompts: int = PROMPTS, tokens: int = TOKENS, model: str | None = None) -> dict:
    """Decode throughput with vLLM's async scheduling (step N+1 launched before step N's tokens are collected) vs
    the same engine with tt.async_decode=false, greedy on device: tokens per second over the whole run (all
    prompts admitted at once, so it is nearly all decode steps). Not the time from the first token: with async
    scheduling vLLM delivers each step's tokens one step later, which would shorten that window by a step."""
    from vllm import LLM, SamplingParams, TokensPrompt

    from tt_models.checkpoint import default_model_dir

    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # collective_rpc reading the runner's record
    path = model or str(default_model_dir())
    ids = [TokensPrompt(prompt_token_ids=p) for p in prompts(n_prompts)]
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    result: dict = {"benchmark": "vllm_async_vs_sync_decode", "prompts": n_prompts, "tokens": tokens,
                    "sampling": "greedy on device"}
    outputs = {}
    for name, flag in (("async", True), ("sync", False)):
        llm = LLM(model=path, max_num_seqs=n_prompts, max_model_len=512, block_size=64,
                  additional_config={"tt": {"sample_on_device_mode": "decode_only", "async_decode": flag}})
        llm.generate(ids[:1], SamplingParams(max_tokens=2))
        engine = llm.llm_engine

        def record(worker: object) -> tuple[int, int]:
            d = worker.model_runner.decoder
            return d.launched, d.drains.get("steady", 0)

        launched0, overlapped0 = llm.collective_rpc(record)[0]
        for i, p in enumerate(ids):
            engine.add_request(str(i), p, params)
        t0 = time.perf_counter()
        done = {}
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.finished:
                    done[out.request_id] = list(out.outputs[0].token_ids)
        end = time.perf_counter()
        launched, overlapped = llm.collective_rpc(record)[0]
        engine.engine_core.shutdown()
        outputs[name] = [done[str(i)] for i in range(n_prompts)]
        result[name] = {"tok_s": round(n_prompts * tokens / (end - t0), 2), "total_s": round(end - t0, 2),
                        "steps_launched_async": launched - launched0,
                        "steps_overlapped": overlapped - overlapped0,
                        "async_scheduling": bool(engine.vllm_config.scheduler_config.async_scheduling)}
    result["ratio_async_over_sync"] = round(result["async"]["tok_s"] / result["sync"]["tok_s"], 3)
    result["outputs_equal"] = outputs["async"] == outputs["sync"]
    result["note"] = ("on the simulator every device command completes when enqueued, so the device time the "
                      "async path hides the host work behind is not concurrent here: the ratio measures the "
                      "overhead of the async machinery, not the overlap a device gives (and it moves with the "
                      "machine's load: both engines run one after the other)")
    return result


def main() -> None:
    part = sys.argv[1] if len(sys.argv) > 1 else "runner"
    if part == "throughput":
        print(json.dumps(throughput()))
        return
    if part == "sampling":
        print(json.dumps(sampling_host_time(*map(int, sys.argv[2:3]))))
        return
    if part == "generator":
        print(json.dumps(generator_host_time(*map(int, sys.argv[2:5]))))
        return
    if part == "async":
        # async [PROMPTS [TOKENS [MODEL_DIR]]]
        counts = map(int, sys.argv[2:4])
        print(json.dumps(async_vs_sync(*counts, *sys.argv[4:5])))
        return
    if part == "itl":
        print(json.dumps(itl_during_long_prefill(*map(int, sys.argv[2:3]))))
        return
    result = {"benchmark": "tt_model_runner_host_ms_per_decode_step", "target_ms_batch32": 0.5,
              "note": "total includes vLLM's Sampler (greedy over the full vocab); runner_only excludes it"}
    # A device decodes at most 32 users (the platform refuses more), so batches stop at 32.
    shapes = [(1, 2048), (8, 2048), (32, 2048), (32, 4096), (32, 8192)]
    for batch, context in shapes:
        total, sampler = runner_host_time(batch, context)
        result[f"batch{batch}_ctx{context}"] = {"total": round(total, 3), "sampler": round(sampler, 3),
                                                "runner_only": round(total - sampler, 3)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
