"""vLLM's OpenAI-compatible server on the TT platform (the simulated TT device when no TT hardware is present).

    python examples/server_example_tt.py --port 8000
    # then, e.g.: curl localhost:8000/v1/completions -d '{"model": "...", "prompt": "Hello", "max_tokens": 16}'

Any further `vllm serve` option can be appended (e.g. --max_model_len 4096 --additional-config '{"tt": {...}}').
"""

from __future__ import annotations

import argparse
import os
import sys

if "TT_BACKEND" not in os.environ:
    from vllm_patches import tt_available

    os.environ["TT_BACKEND"] = "ttnn" if tt_available() else "sim"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="HF model directory (default: SmolLM2-135M-Instruct)")
    p.add_argument("--max_num_seqs", type=int, default=32)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--max_model_len", type=int, default=2048)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    args, rest = p.parse_known_args()
    if args.model is None:
        from tt_models.checkpoint import default_model_dir

        args.model = str(default_model_dir())
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", "serve", args.model, "--max-num-seqs", str(args.max_num_seqs), "--block-size",
                str(args.block_size), "--max-model-len", str(args.max_model_len), "--host", args.host,
                "--port", str(args.port), *rest]
    vllm_main()


if __name__ == "__main__":
    main()
