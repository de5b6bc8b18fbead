"""The TT platform's config checks: refused features get errors naming them; TT settings are applied."""

import pytest
from vllm.engine.arg_utils import EngineArgs

from vllm_patches import register_platform
from vllm_patches.tt_config import TTConfig


def config(smollm2_dir, **kw):
    kw.setdefault("max_num_seqs", 32)
    return EngineArgs(model=smollm2_dir, max_model_len=1024, **kw).create_engine_config()


def test_platform_is_active_with_simulator():
    from vllm.platforms import current_platform

    assert register_platform() == "vllm_patches.platform.TTPlatform"
    assert type(current_platform).__name__ == "TTPlatform"


def test_plugin_logs_go_through_vllms_handler():
    """vLLM configures only its "vllm" logger (when an engine starts, after plugins load); the plugin's and the
    models' INFO lines must reach whatever handler it has then."""
    import logging

    from vllm.config import LoggingConfig
    from vllm.logger import configure_logging

    register_platform()
    configure_logging(LoggingConfig())  # what LLM / the engine core do at start
    seen = []
    catcher = logging.Handler()
    catcher.emit = lambda record: seen.append(record.getMessage())
    vllm_logger = logging.getLogger("vllm")
    assert vllm_logger.handlers, "vLLM configured no handler"
    vllm_logger.addHandler(catcher)
    try:
        for name in ("vllm_patches.worker", "generator_vllm", "tt_models.generator"):
            logging.getLogger(name).info("hello from %s", name)
    finally:
        vllm_logger.removeHandler(catcher)
    assert seen == [f"hello from {n}" for n in ("vllm_patches.worker", "generator_vllm", "tt_models.generator")]


@pytest.mark.parametrize("backend,has_ttnn,hint", [
    ("", False, "set TT_BACKEND=sim"),
    ("cuda", False, "TT_BACKEND='cuda' is not a backend"),
    ("", True, "ttnn is installed but sees no Tenstorrent device; set TT_BACKEND=sim"),
])
def test_inactive_plugin_says_how_to_turn_it_on(monkeypatch, backend, has_ttnn, hint):
    import importlib.util
    import logging

    import vllm_patches

    monkeypatch.setenv("TT_BACKEND", backend)
    real_find_spec = importlib.util.find_spec
    if has_ttnn:  # a ttnn that imports and counts the machine's devices: none here
        import importlib.machinery
        import sys
        import types

        monkeypatch.setitem(sys.modules, "ttnn", types.SimpleNamespace(get_num_devices=lambda: 0))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        (importlib.machinery.ModuleSpec("ttnn", None) if has_ttnn else None) if name == "ttnn"
        else real_find_spec(name, *a)))
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("vllm_patches").addHandler(handler)
    try:
        assert vllm_patches.register_platform() is None
    finally:
        logging.getLogger("vllm_patches").removeHandler(handler)
    assert any("TT platform plugin inactive" in m and hint in m for m in seen), seen


def test_settings_applied(smollm2_dir):
    cfg = config(smollm2_dir, max_num_seqs=8, max_num_batched_tokens=200)
    assert cfg.parallel_config.worker_cls == "vllm_patches.worker.TTWorker"
    assert cfg.scheduler_config.scheduler_cls == "vllm_patches.scheduler.TTScheduler"
    assert not cfg.scheduler_config.async_scheduling
    # A budget below max_model_len prefills long prompts in chunks of whole blocks.
    assert cfg.scheduler_config.enable_chunked_prefill and cfg.scheduler_config.max_num_batched_tokens == 192
    whole = config(smollm2_dir, max_num_seqs=8, max_num_batched_tokens=4096)
    assert not whole.scheduler_config.enable_chunked_prefill
    assert whole.scheduler_config.max_num_batched_tokens >= 1024  # fits a max_model_len prompt
    assert cfg.cache_config.block_size == 64
    # The block count is decided by the worker once the weights are on the device (tests/vllm/test_kv_blocks.py).
    assert cfg.cache_config.num_gpu_blocks_override is None


@pytest.mark.parametrize("kw,match", [
    (dict(tensor_parallel_size=3), "TT shards models across its own mesh"),
    (dict(pipeline_parallel_size=2), "pipeline_parallel_size=1 on the vLLM side"),
    (dict(enable_lora=True), "LoRA is not supported on TT"),
    (dict(enable_prompt_embeds=True), "enable_prompt_embeds is not supported on TT"),
    (dict(block_size=48), "multiple of 32"),
    (dict(max_num_seqs=33), r"max_num_seqs=33: one TT device decodes at most 32 users.*data parallel"),
    (dict(load_format="pt"), r"--load-format 'pt' is not supported on TT; supported: auto, safetensors, dummy"),
    (dict(load_format="gguf"), r"--load-format 'gguf' is not supported"),
    (dict(additional_config={"tt": {"trace": "all"}}), r"unknown key\(s\) \['trace'\]"),
    (dict(additional_config={"tt": {"trace_mode": "sometimes"}}), "trace_mode"),
    (dict(additional_config={"tt": {"trace_mode": "all"}}),
     r'"trace_mode"\]="all" is not supported: prefill is not traced'),
    (dict(additional_config={"tt": {"sample_on_device_mode": "all"}}),
     r'"sample_on_device_mode"\]="all" is not supported: a prefill step\'s first token is sampled by vLLM\'s sampler'),
    (dict(additional_config={"tt": {"optimizations": "fastest"}}), "unknown optimization 'fastest'"),
])
def test_refusals(smollm2_dir, kw, match):
    with pytest.raises(Exception, match=match):
        config(smollm2_dir, **kw)


@pytest.mark.parametrize("additional,users", [(None, 32), ({"tt": {"data_parallel": 2}}, 64)])
def test_max_num_seqs_defaults_to_what_the_replicas_decode(smollm2_dir, caplog, additional, users):
    """Unset (as `vllm serve MODEL` leaves it), max_num_seqs is 32 per replica, not vLLM's hardware default (256 or
    more, which the device refuses); an explicit value is the user's (above: 33 is refused)."""
    import logging

    kw = {} if additional is None else {"additional_config": additional}
    with caplog.at_level(logging.INFO, logger="vllm_patches"):
        cfg = config(smollm2_dir, max_num_seqs=None, **kw)
    assert cfg.scheduler_config.max_num_seqs == users
    assert any(f"max_num_seqs not set: {users}" in r.getMessage() for r in caplog.records)
    assert config(smollm2_dir, max_num_seqs=8, **kw).scheduler_config.max_num_seqs == 8


def test_dispatch_core_axis_becomes_the_meshs_dispatch_core_config():
    import ttnn_sim as ttnn

    assert TTConfig().dispatch_core_config(ttnn) is None
    for axis, want in (("row", ttnn.DispatchCoreAxis.ROW), ("col", ttnn.DispatchCoreAxis.COL)):
        cfg = TTConfig.from_additional_config({"tt": {"dispatch_core_axis": axis}}).dispatch_core_config(ttnn)
        assert cfg.axis is want and cfg.type is ttnn.DispatchCoreType.WORKER
    with pytest.raises(ValueError, match=r"dispatch_core_axis.*'diagonal'.*expected one of \(None, 'row', 'col'\)"):
        TTConfig.from_additional_config({"tt": {"dispatch_core_axis": "diagonal"}})


def test_tt_config_defaults():
    tt = TTConfig.from_additional_config({})
    assert tt.trace_decode and tt.optimizations == "performance" and not tt.sample_on_device(prefill=False)
    assert TTConfig.from_additional_config({"tt": {"sample_on_device_mode": "decode_only"}}).sample_on_device(False)


def test_request_refusals_are_client_errors():
    """Per-request refusals are vLLM's VLLMValidationError, which its server answers with a 400 (a plain ValueError
    from the engine client becomes a 500 with no message); tests/vllm/test_server.py checks it over HTTP."""
    from vllm.exceptions import VLLMValidationError
    from vllm.pooling_params import PoolingParams
    from vllm.sampling_params import SamplingParams

    from vllm_patches.platform import TTPlatform

    with pytest.raises(VLLMValidationError, match="pooling requests are not supported"):
        TTPlatform.validate_request(None, PoolingParams())
    with pytest.raises(VLLMValidationError, match="logprobs=21: TT returns at most 20"):
        TTPlatform.validate_request(None, SamplingParams(logprobs=21))
    TTPlatform.validate_request(None, SamplingParams(logprobs=20, prompt_logprobs=20))


def test_one_list_of_architectures():
    """tt_models.model_args.SUPPORTED_ARCHITECTURES is the one list: vLLM's registry entries, their adapters and the
    generation classes all follow it."""
    import importlib

    from generator_vllm import TT_CLASSES
    from tt_models.model_args import SUPPORTED_ARCHITECTURES
    from vllm_patches.registry import TT_ARCHITECTURES

    assert set(TT_CLASSES) == set(SUPPORTED_ARCHITECTURES)
    assert set(TT_ARCHITECTURES) == {f"TT{a}" for a in SUPPORTED_ARCHITECTURES}
    for adapter, generation in TT_ARCHITECTURES.values():
        for target in (adapter, generation):
            module, name = target.split(":")
            assert hasattr(importlib.import_module(module), name), target
