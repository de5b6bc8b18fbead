"""Backend selection: TT_BACKEND forces the simulator or the real ttnn, and the default falls back to the simulator
when real ttnn is not importable (as on every machine without TT hardware)."""

import importlib.util

import pytest

from tt_models import backend


@pytest.fixture(autouse=True)
def _reset():
    backend.reset_backend_for_tests()
    yield
    backend.reset_backend_for_tests()


def test_forced_simulator(monkeypatch):
    monkeypatch.setenv("TT_BACKEND", "sim")
    import ttnn_sim as ttnn

    assert backend.get_ttnn() is ttnn and backend.is_simulator()


@pytest.mark.skipif(importlib.util.find_spec("ttnn") is not None, reason="real ttnn is installed here")
def test_default_falls_back_to_simulator_and_forced_ttnn_fails_clearly(monkeypatch, caplog):
    monkeypatch.delenv("TT_BACKEND", raising=False)
    with caplog.at_level("INFO"):
        assert backend.is_simulator(backend.get_ttnn())
    assert "real ttnn not importable" in caplog.text
    backend.reset_backend_for_tests()
    monkeypatch.setenv("TT_BACKEND", "ttnn")
    with pytest.raises(RuntimeError, match="TT_BACKEND=ttnn but real ttnn not importable"):
        backend.get_ttnn()


def test_bad_value(monkeypatch):
    monkeypatch.setenv("TT_BACKEND", "gpu")
    with pytest.raises(ValueError, match="expected 'sim' or 'ttnn'"):
        backend.get_ttnn()
