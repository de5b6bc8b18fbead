"""Can SmolLM2 draft for itself with some of its own layers? Teacher-forced agreement of layer-skipping drafts with
the full model, in HF (fp32, the same bf16-rounded weights the simulator uses). Prints JSON (--out writes it).

No smaller checkpoint of SmolLM2's tokenizer is installable here (docs/spec-decode.md), so a draft would have to
come from the target itself: its first layers (early exit), or its layers with some skipped in the middle
(self-speculative decoding, as Draft & Verify and LayerSkip do). For each subset of layers this runs the full
model's greedy continuation of the spec-decode benchmark's prompts (benchmarks/bench_spec_decode.py: copyable and
fresh) and counts the positions where the draft's argmax, given the same prefix, is the full model's token: the
per-token acceptance a greedy verify step would see for a first draft (later drafts in a step are accepted only if
every earlier one was).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from bench_json import emit  # a sibling: scripts run with benchmarks/ first on sys.path
from bench_spec_decode import COPYABLE, FRESH

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.models.tiny's HF loader


def subsets(n: int) -> dict[str, list[int]]:
    """Named layer subsets of an n-layer model (SmolLM2-135M: 30)."""
    return {
        "first 6": list(range(6)),
        "first 4 + last 8": list(range(4)) + list(range(n - 8, n)),
        "first 6 + last 6": list(range(6)) + list(range(n - 6, n)),
        "every second": list(range(0, n, 2)),
        "first 10 + last 5": list(range(10)) + list(range(n - 5, n)),
        "first 8 + last 10": list(range(8)) + list(range(n - 10, n)),
        "first 15 + last 3": list(range(15)) + list(range(n - 3, n)),
        "outer 4 + even middle": [i for i in range(n) if i < 4 or i >= n - 4 or i % 2 == 0],
        "first 20 + last 3": list(range(20)) + list(range(n - 3, n)),
        "all but the last 3": list(range(n - 3)),
    }


@torch.no_grad()
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model directory (default: the installed SmolLM2)")
    p.add_argument("--tokens", type=int, default=48)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    from transformers import AutoTokenizer

    from tests.models.tiny import load_hf
    from tt_models.checkpoint import default_model_dir

    path = a.model or str(default_model_dir())
    model, tok = load_hf(path), AutoTokenizer.from_pretrained(path)
    layers = list(model.model.layers)
    runs: dict[str, list[tuple[int, torch.Tensor]]] = {"copyable": [], "fresh": []}
    for workload, prompts in (("copyable", COPYABLE), ("fresh", FRESH)):
        for prompt in prompts:
            ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                          return_tensors="pt")
            ids = ids if torch.is_tensor(ids) else ids["input_ids"]
            out = model.generate(ids, max_new_tokens=a.tokens, do_sample=False)
            runs[workload].append((ids.shape[1], out))

    def agreement(keep: list[int]) -> dict[str, Any]:
        model.model.layers = torch.nn.ModuleList([layers[i] for i in keep])
        model.config.num_hidden_layers = len(keep)
        res: dict[str, Any] = {"layers": keep}
        for workload, seqs in runs.items():
            hit = total = 0
            for plen, out in seqs:
                pred = model(out, use_cache=False).logits[0, plen - 1:-1].argmax(-1)
                hit += int((pred == out[0, plen:]).sum())
                total += out.shape[1] - plen
            res[workload] = round(hit / total, 3)
        return res

    result: dict[str, Any] = {"model": path, "tokens": a.tokens, "layers": len(layers), "drafts": {}}
    for name, keep in subsets(len(layers)).items():
        result["drafts"][name] = agreement(keep)
    model.model.layers = torch.nn.ModuleList(layers)
    model.config.num_hidden_layers = len(layers)
    emit(result, a.out)


if __name__ == "__main__":
    main()
