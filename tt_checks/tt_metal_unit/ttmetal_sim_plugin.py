"""pytest plugin: run Tenstorrent's own ttnn unit tests, unchanged, against the simulator.

Loaded with ``-p ttmetal_sim_plugin`` (tt_checks/tt_metal_unit on PYTHONPATH) by ``run.py``. It

* makes ``import ttnn`` (and ``import ttnn.<submodule>``) resolve to ``ttnn_sim``, before any test module
  is imported;
* provides the fixtures tt-metal's root ``conftest.py`` gives its tests (``device``, ``device_params`` with indirect
  parametrization, ``mesh_device``, ``t3k_mesh_device`` / ``n300_mesh_device`` / ``pcie_mesh_device`` on the
  simulated meshes (TT_SIM_NUM_DEVICES chips, 8 by default) with device_params' fabric_config set around them,
  ``reset_seeds``, ``function_level_defaults``, ``use_program_cache``, ...) with the same meaning on the simulator's
  default chip, a Wormhole N150: our own code, written from reading that conftest;
* registers tt-metal's custom marks so they are not warnings;
* fails (never skips) a test that runs past a per-test time limit, so a test too slow for a CPU counts against the
  pass rate instead of vanishing;
* writes one JSON line per test report to ``$TT_METAL_UNIT_REPORT`` for ``run.py`` to aggregate.

Nothing here skips or hides a test: skips come only from the tests' own skip logic (``skip_for_blackhole`` and
friends evaluate against the simulated chip's arch).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pkgutil
import random
import re
import signal
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch


def _alias_simulator_as_ttnn() -> None:
    """Register the simulator package and every submodule under the name ``ttnn``."""
    sim = importlib.import_module("ttnn_sim")
    sys.modules["ttnn"] = sim
    for info in pkgutil.iter_modules(sim.__path__):
        module = importlib.import_module(f"ttnn_sim.{info.name}")
        sys.modules[f"ttnn.{info.name}"] = module
    # ttnn.operations is a package in the real ttnn; the simulator keeps its pure-Python module activations at the
    # top level (ttnn_sim.activations) and this gives it the real dotted name.
    activations = importlib.import_module("ttnn_sim.activations")
    sys.modules["ttnn.operations.activations"] = activations
    sys.modules["ttnn.operations"].activations = activations


# TT_METAL_UNIT_REAL_TTNN=1 (with .venv-ttnn's python, on a mock device) keeps the real ttnn: the same fixtures then
# show which of a file's calls the real 0.81.1 accepts (a mock device computes no values, so its comparisons fail).
if os.environ.get("TT_METAL_UNIT_REAL_TTNN") != "1":
    _alias_simulator_as_ttnn()

import ttnn  # noqa: E402  (the simulator, aliased above)

# Per-test wall-clock limit (seconds). A test past it FAILS with a timeout reason; see manifest.yaml.
TIMEOUT_S = float(os.environ.get("TT_METAL_UNIT_TIMEOUT_S", "120"))


# ----------------------------------------------------------------------------------------------------------------
# Fixtures, with the semantics of tt-metal's root conftest.py
# ----------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="function")
def reset_seeds() -> Iterator[None]:
    torch.manual_seed(213919)
    np.random.seed(213919)
    random.seed(213919)
    yield


@pytest.fixture(scope="function")
def function_level_defaults(reset_seeds: None) -> Iterator[None]:
    yield


@pytest.fixture(scope="function")
def device_params(request: pytest.FixtureRequest) -> dict:
    return getattr(request, "param", {})


def _updated_device_params(device_params: dict) -> dict:
    """tt-metal turns ``dispatch_core_axis`` into a ``DispatchCoreConfig`` (ROW on Wormhole, COL on Blackhole)."""
    params = dict(device_params)
    axis = params.pop("dispatch_core_axis", None)
    if axis is None:
        axis = ttnn.DispatchCoreAxis.COL if ttnn.get_arch_name() == "blackhole" else ttnn.DispatchCoreAxis.ROW
    params["dispatch_core_config"] = ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.WORKER, axis)
    return params


@pytest.fixture(scope="function")
def device(request: pytest.FixtureRequest, device_params: dict) -> Iterator[Any]:
    dev = ttnn.open_device(device_id=0, **_updated_device_params(device_params))
    yield dev
    ttnn.synchronize_device(dev)
    ttnn.close_device(dev)


@pytest.fixture(scope="function")
def silicon_arch_name() -> str:
    return ttnn.get_arch_name()


@pytest.fixture(scope="function")
def silicon_arch_wormhole_b0(silicon_arch_name: str) -> None:
    if silicon_arch_name != "wormhole_b0":
        pytest.skip("wormhole_b0-only test")


@pytest.fixture(scope="function")
def silicon_arch_blackhole(silicon_arch_name: str) -> None:
    if silicon_arch_name != "blackhole":
        pytest.skip("blackhole-only test")


def _open_mesh(shape: Any, device_params: dict) -> Any:
    """tt-metal's conftest: the fabric (device_params' fabric_config, reliability_mode, fabric_tensix_config,
    fabric_router_config) is set before the mesh opens
    and set back to DISABLED after it closes; the rest of device_params goes to open_mesh_device."""
    params = _updated_device_params(device_params)
    fabric_config = params.pop("fabric_config", None)
    reliability_mode = params.pop("reliability_mode", None)
    fabric_tensix_config = params.pop("fabric_tensix_config", None)
    fabric_router_config = params.pop("fabric_router_config", None)
    if fabric_config:
        kwargs = {}
        if reliability_mode is not None:
            kwargs["reliability_mode"] = reliability_mode
        if fabric_tensix_config is not None:
            kwargs["fabric_tensix_config"] = fabric_tensix_config
        if fabric_router_config is not None:  # conftest passes it as set_fabric_config's 7th (router_config)
            kwargs["router_config"] = fabric_router_config
        ttnn.set_fabric_config(fabric_config, **kwargs)
    return ttnn.open_mesh_device(mesh_shape=shape, **params), fabric_config


def _close_mesh(dev: Any, fabric_config: Any) -> None:
    ttnn.close_mesh_device(dev)
    if fabric_config:
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


@pytest.fixture(scope="function")
def mesh_device(request: pytest.FixtureRequest, device_params: dict) -> Iterator[Any]:
    """An int param is a device count (capped at what exists), a tuple a mesh shape (skip if too big)."""
    device_ids = ttnn.get_device_ids()
    param = getattr(request, "param", len(device_ids))
    if isinstance(param, tuple):
        if param[0] * param[1] > len(device_ids):
            pytest.skip("Requested more devices than available. Test not applicable for machine")
        shape = ttnn.MeshShape(*param)
    else:
        shape = ttnn.MeshShape(1, min(param, len(device_ids)))
    dev, fabric = _open_mesh(shape, device_params)
    yield dev
    _close_mesh(dev, fabric)


def _fixed_mesh(rows: int, cols: int, device_params: dict, why: str) -> Iterator[Any]:
    if rows * cols > ttnn.get_num_devices():
        pytest.skip(why)
    dev, fabric = _open_mesh(ttnn.MeshShape(rows, cols), device_params)
    yield dev
    _close_mesh(dev, fabric)


@pytest.fixture(scope="function")
def t3k_mesh_device(device_params: dict) -> Iterator[Any]:
    """tt-metal's T3000 fixture: the eight chips as a 1x8 mesh."""
    yield from _fixed_mesh(1, 8, device_params, "Not T3000!")


@pytest.fixture(scope="function")
def n300_mesh_device(device_params: dict) -> Iterator[Any]:
    """tt-metal's N300 fixture: two chips as a 1x2 mesh."""
    yield from _fixed_mesh(1, 2, device_params, "Not N300!")


@pytest.fixture(scope="function")
def pcie_mesh_device(device_params: dict) -> Iterator[Any]:
    """tt-metal's fixture for the four PCIe-attached chips of a T3000, as a 2x2 mesh."""
    yield from _fixed_mesh(2, 2, device_params, "Requires at least 4 devices to run")


@pytest.fixture(scope="function")
def use_program_cache() -> Iterator[None]:
    # The program cache is always on in ttnn 0.81.1 (enable_program_cache is gone); nothing to switch.
    yield


@pytest.fixture(scope="function")
def is_ci_env() -> bool:
    return os.getenv("CI") == "true"


@pytest.fixture
def expect_error() -> Any:
    """tt-metal's root-conftest fixture: ``with expect_error(ErrorType, pattern):`` passes when the block raises
    ErrorType whose message matches ``pattern`` (a regular expression searched in it, as tt-metal's fixture does with
    ``pytest.raises(error, match=message)``; test_all_gather.py's patterns use ``.*``), and fails the test when the
    block raises nothing."""

    @contextlib.contextmanager
    def expect_error_(error: type[BaseException], message: str | None = None) -> Iterator[None]:
        try:
            yield
        except error as exception:
            assert message is None or re.search(message, str(exception)), \
                f"{error.__name__} raised, not matching {message!r}: {exception}"
        else:
            pytest.fail(f"Expected {error.__name__} matching {message!r}")

    return expect_error_


# ----------------------------------------------------------------------------------------------------------------
# Marks, timeout, report
# ----------------------------------------------------------------------------------------------------------------

def pytest_configure(config: pytest.Config) -> None:
    for mark in ("use_module_device", "post_commit", "models_performance_bare_metal", "requires_fast_runtime_mode_off",
                 "timeout", "slow"):
        config.addinivalue_line("markers", f"{mark}: tt-metal test mark (no effect on the simulator)")


class _TestTimeout(BaseException):
    """Raised by the alarm; a BaseException so a test's own ``except Exception`` cannot swallow it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _TestTimeout(f"test ran past the {TIMEOUT_S:.0f} s per-test limit (TT_METAL_UNIT_TIMEOUT_S)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _reason(report: pytest.TestReport) -> str:
    """The exception line pytest shows (``E   Type: message``), first line only."""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0] if crash.message else "(no message)"
    if isinstance(longrepr, tuple):  # skips: (path, lineno, reason)
        return str(longrepr[2])
    return str(longrepr).splitlines()[-1] if longrepr else ""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get("TT_METAL_UNIT_REPORT")
    if not path:
        return
    if report.when == "call" or report.outcome != "passed":
        if report.when != "call" and report.outcome == "failed":
            outcome = "error"
        elif hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        else:
            outcome = report.outcome
        reason = "" if outcome == "passed" else _reason(report)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"nodeid": report.nodeid, "when": report.when, "outcome": outcome,
                                "reason": reason, "duration": round(report.duration, 3)}) + "\n")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module that fails to import is a collection error: record it (every test in it is lost)."""
    path = os.environ.get("TT_METAL_UNIT_REPORT")
    if path and report.failed:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"nodeid": report.nodeid, "when": "collect", "outcome": "error",
                                "reason": str(report.longrepr).strip().splitlines()[-1], "duration": 0.0}) + "\n")
