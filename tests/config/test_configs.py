"""tt_models/configs/*.yaml load into typed settings, and bad files fail with errors naming the problem."""

import pytest

from tt_models.config import (
    ConfigError,
    load_device_profile,
    load_model_overrides,
    load_optimizations,
    mesh_shape_from_env,
)
from tt_models.config.models import _parse, validate_all


def test_shipped_profiles():
    perf, acc = load_optimizations("performance"), load_optimizations("accuracy")
    assert perf.precision("WQKV") == "BFP8" and perf.precision("KV_CACHE") == "BFP8"
    assert perf.fidelity("LI_FF1_FF3") == "LOFI"
    assert acc.precision("WO") == "BF16" and acc.fidelity("SDPA_DECODE").startswith("HIFI4")
    bfp4 = load_optimizations("performance_bfp4")
    assert bfp4.precision("FF1_FF3") == "BFP4" and bfp4.precision("WQKV") == "BFP8"  # inherits the rest
    assert perf.cache_tag(30) != bfp4.cache_tag(30)
    ref = load_optimizations("reference")
    assert ref.simulator_only and ref.precision("KV_CACHE") == "FP32" and not acc.simulator_only
    from tt_models.config.optimizations import hardware_profiles

    assert hardware_profiles() == ["accuracy", "bf16", "performance", "performance_bfp4"]
    validate_all()


def test_layer_overrides(tmp_path):
    f = tmp_path / "custom.yaml"
    f.write_text("base: performance\nlayers:\n  0: {precision: {FF1_FF3: BF16}, fidelity: {LI_FF2: HIFI4}}\n")
    p = load_optimizations(f)
    assert p.precision("FF1_FF3", 0) == "BF16" and p.precision("FF1_FF3", 1) == "BFP8"
    assert p.fidelity("LI_FF2", 0) == "HIFI4" and p.fidelity("LI_FF2") == "HIFI2"


@pytest.mark.parametrize("body,match", [
    ("base: performance\nprecision: {WQKV: BFP3}\n", "WQKV='BFP3' is not one of"),
    ("base: performance\nprecision: {KV_CACHE: BFP4}\n", "KV_CACHE='BFP4' is not one of"),
    ("base: performance\nprecisions: {}\n", r"unknown key\(s\) \['precisions'\]"),
    ("precision: {WQKV: BF16}\nfidelity: {}\n", r"missing key\(s\)"),
    ("base: performance\nlayers: {x: {}}\n", "layer keys must be non-negative integers"),
    ("- a\n- b\n", "expected a mapping"),
])
def test_bad_profiles_are_refused(tmp_path, body, match):
    f = tmp_path / "bad.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError, match=match):
        load_optimizations(f)


def test_unknown_names():
    known = r"known: \['accuracy', 'bf16', 'performance', 'performance_bfp4', 'reference'\]"
    with pytest.raises(ConfigError, match=r"unknown optimization 'fastest'; " + known):
        load_optimizations("fastest")
    with pytest.raises(ConfigError, match="unknown device 'N999'"):
        load_device_profile("N999")
    with pytest.raises(ConfigError, match="unknown tensor group 'QKV'"):
        load_optimizations("performance").precision("QKV")


def test_devices_and_mesh_env(monkeypatch):
    assert load_device_profile("N150").mesh_shape == (1, 1)
    assert load_device_profile("T3K").num_devices == 8
    assert load_device_profile("P100").name == "P150"  # alias
    assert load_device_profile("TG").mesh_shape == (8, 4)
    monkeypatch.setenv("MESH_DEVICE", "N300")
    assert mesh_shape_from_env() == (1, 2)
    monkeypatch.setenv("MESH_DEVICE", "(2, 4)")
    assert mesh_shape_from_env() == (2, 4)
    monkeypatch.setenv("MESH_DEVICE", "X9")
    with pytest.raises(ConfigError, match="MESH_DEVICE='X9': expected one of"):
        mesh_shape_from_env()
    monkeypatch.delenv("MESH_DEVICE")
    assert mesh_shape_from_env(4) == (1, 4)


def test_model_overrides():
    smol = load_model_overrides("/some/cache/SmolLM2-135M-Instruct")
    assert smol.max_prefill_chunk == 2048 and smol.token_budget == 32768
    assert load_model_overrides("Meta-Llama-3.1-8B-Instruct").profile_for("performance") == "performance_bfp4"
    assert load_model_overrides("unknown-model").token_budget is None


@pytest.mark.parametrize("body,match", [
    ("mesh_shape: [1, 1]\nmax_batch_per_device: 32\nmax_context: 4096\nmax_prefill_chunk: 4096\n"
     "trace_region_size: 1\nmesh: x\n", r"unknown key\(s\) \['mesh'\]; allowed: \['mesh_shape'"),
    ("mesh_shape: [1, 1, 1]\nmax_batch_per_device: 32\nmax_context: 4096\nmax_prefill_chunk: 4096\n"
     "trace_region_size: 1\n", r"mesh_shape must be \[rows, cols\]"),
    ("mesh_shape: [1, 1]\nmax_batch_per_device: 0\nmax_context: 4096\nmax_prefill_chunk: 4096\n"
     "trace_region_size: 1\n", "max_batch_per_device must be an integer >= 1, got 0"),
    ("mesh_shape: [1, 1]\n", r"missing key\(s\) \['max_batch_per_device'"),
])
def test_bad_device_files_are_refused(tmp_path, body, match):
    f = tmp_path / "dev.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError, match=match):
        load_device_profile(str(f))


@pytest.mark.parametrize("body,match", [
    ("match: [x*]\nmax_prefil_chunk: 64\n", r"unknown key\(s\) \['max_prefil_chunk'\]"),
    ("match: x*\n", "match must be a list of name patterns"),
    ("match: [x*]\noptimizations: {performance: turbo}\n", "unknown optimization 'turbo'"),
    ("match: [x*]\nmax_prefill_chunk: 16\n", "max_prefill_chunk must be an integer >= 32"),
])
def test_bad_model_files_are_refused(tmp_path, body, match):
    f = tmp_path / "model.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError, match=match):
        _parse(f)
