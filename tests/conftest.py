import os

import pytest
import torch

# Tests never depend on a TT device: force the simulator unless a developer asked otherwise.
os.environ.setdefault("TT_BACKEND", "sim")


@pytest.hookimpl(trylast=True)  # after pytest's own, which makes the temporary-folder factory
def pytest_configure(config) -> None:
    """The tests' weight and model caches live in this session's temporary folder, never the user's
    ~/.cache/tt_vllm_adapter: a test's random checkpoint is keyed by its files' mtimes, so each run would add a new
    converted copy there (measured: about 50 folders, several GB, per full run). Set here, before any test, so the
    engine-core and example subprocesses inherit it; TT_TEST_CACHE names a folder to keep between runs instead."""
    if "TT_TEST_CACHE" in os.environ:
        os.environ["TT_VLLM_CACHE"] = os.environ["TT_TEST_CACHE"]
        return
    base = config._tmp_path_factory.getbasetemp()
    # One cache for the run's xdist workers (each has its own basetemp inside the run's): SmolLM2 and its TT
    # weights are converted once, under the converters' file locks, and removed with the run's folder.
    root = base.parent if hasattr(config, "workerinput") else base
    os.environ["TT_VLLM_CACHE"] = str(root / "tt_cache")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    """Pearson correlation of two tensors, the accuracy figure TT model tests use. 0.0 when either side is constant
    (a model emitting constant logits correlates with nothing, and must fail every PCC threshold) and NaN when either
    holds a NaN (fails every comparison)."""
    a, b = a.double().flatten(), b.double().flatten()
    if a.shape != b.shape:
        raise ValueError(f"pcc of tensors with {a.numel()} and {b.numel()} values")
    a, b = a - a.mean(), b - b.mean()
    denom = a.norm() * b.norm()
    return 0.0 if denom == 0 else float((a @ b) / denom)


@pytest.fixture(scope="module", autouse=True)
def _no_simulated_device_left_open(request):
    """Every module closes the simulated devices it opens. The simulator, like a host with its chips, lets a process
    open each chip once: a device left open fails whichever module the same process runs next, which depends on how
    pytest-xdist shares the files out. The module that leaked is named here, and its devices closed."""
    yield
    from ttnn_sim import device as sim_device

    left = list(sim_device._open)
    for dev in left:
        sim_device.close_mesh_device(dev)
    assert not left, f"{request.module.__name__} left simulated device(s) {[d.get_device_ids() for d in left]} open"


# Files of few, long tests (engine starts, a wheel build, benchmark runs), started first.
LONG_FIRST = ("tests/vllm/", "tests/packaging/", "tests/benchmarks/")


def pytest_collection_modifyitems(items) -> None:
    """The long files first (a stable reorder): pytest-xdist hands files out in order, so started last they would
    leave one worker finishing them while the other idles (measured: the wheel build and a two-engine vLLM test ran
    alone for the last 10 minutes of a 30-minute run)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))
