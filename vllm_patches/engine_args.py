"""What the TT platform changes in vLLM's EngineArgs before the engine config is built: the max_num_seqs default,
and a GGUF file given as the model. Installed from TTPlatform.pre_register_and_update, which vLLM calls at the start
of EngineArgs.create_engine_config (and when it builds the CLI parser), before either hook is reached."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Converted HF directory -> the GGUF path the user gave, which stays the served model name.
_GGUF_SOURCES: dict[str, str] = {}


def install_engine_arg_hooks() -> None:
    """Idempotent."""
    import vllm.engine.arg_utils as arg_utils

    args = arg_utils.EngineArgs
    if not getattr(args._set_default_max_num_seqs_and_batched_tokens_args, "_tt_hook", False):
        args._set_default_max_num_seqs_and_batched_tokens_args = _default_max_num_seqs(
            args._set_default_max_num_seqs_and_batched_tokens_args)
    if not getattr(arg_utils.maybe_override_with_speculators, "_tt_hook", False):
        arg_utils.maybe_override_with_speculators = _gguf_file_as_hf_dir(arg_utils.maybe_override_with_speculators)
    if not getattr(args.create_model_config, "_tt_hook", False):
        args.create_model_config = _gguf_served_name(args.create_model_config)


def _hook(fn: Any) -> Any:
    fn._tt_hook = True
    return fn


def _default_max_num_seqs(original: Any) -> Any:
    """When the user sets no max_num_seqs, vLLM picks one for its hardware (256 or more), above the 32 users a TT
    device decodes: `vllm serve MODEL` with no other flag would be refused. Default it to what the replicas serve
    instead (32 each), before vLLM's own default applies; an explicit value is kept, and refused if larger."""

    def set_defaults(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.max_num_seqs is None:
            from generator_vllm import MAX_USERS_PER_DEVICE
            from vllm_patches.tt_config import TTConfig

            replicas = TTConfig.from_additional_config(self.additional_config).data_parallel
            self.max_num_seqs = MAX_USERS_PER_DEVICE * replicas
            logger.info("max_num_seqs not set: %d (%d users per TT device x %d replica(s))", self.max_num_seqs,
                        MAX_USERS_PER_DEVICE, replicas)
        return original(self, *args, **kwargs)

    return _hook(set_defaults)


def _gguf_file_as_hf_dir(original: Any) -> Any:
    """vLLM 0.32 has no GGUF loader: a .gguf model path fails reading it as a config. A GGUF file of a supported
    family is converted once (dequantized by transformers' GGUF reader, as the default model is) into an HF directory
    in the package's cache, which vLLM then serves; its tokenizer is the GGUF's own unless --tokenizer names one.
    This is the first place vLLM resolves the model argument."""

    def resolve(model: str, tokenizer: str | None, *args: Any, **kwargs: Any) -> Any:
        path = Path(model)
        if path.suffix == ".gguf" and path.is_file():
            from tt_models.checkpoint import gguf_model_dir

            hf_dir = str(gguf_model_dir(path))
            logger.info("serving GGUF %s from its HF conversion %s", model, hf_dir)
            _GGUF_SOURCES[hf_dir] = model
            model, tokenizer = hf_dir, tokenizer or hf_dir
        return original(model, tokenizer, *args, **kwargs)

    return _hook(resolve)


def _gguf_served_name(original: Any) -> Any:
    def create_model_config(self: Any) -> Any:
        source = _GGUF_SOURCES.get(self.model)
        if source is not None and not self.served_model_name:
            self.served_model_name = source  # clients name the model as the user gave it
        return original(self)

    return _hook(create_model_config)
