"""Checkpoints: HF safetensors directories, GGUF files (converted once), and the HF -> Meta (TT) weight layout."""

from .gguf import convert_gguf_to_hf_dir, default_model_dir, gemma3_270m_dir, gguf_model_dir
from .hf import load_state_dict
from .meta import hf_to_meta, pad_mlp_weights

__all__ = ["convert_gguf_to_hf_dir", "default_model_dir", "gemma3_270m_dir", "gguf_model_dir", "hf_to_meta",
           "load_state_dict", "pad_mlp_weights"]
