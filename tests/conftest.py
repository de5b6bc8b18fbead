import os
import sys

import pytest
import torch

# Tests never depend on a TT device: force the simulator unless a developer asked otherwise.
os.environ.setdefault("TT_BACKEND", "sim")
# The tests' engines fork their engine core from the test process instead of spawning a fresh interpreter (the
# platform's default, vllm_patches/platform.py): a spawned core re-imports vLLM and torch, 12 to 20 s of every
# engine start (measured), and the suite starts about a hundred. A fork is safe only if the parent has no GNU OpenMP
# thread pool: torch starts none on one thread (scripts/test.sh sets OMP_NUM_THREADS=1 when tests run in parallel),
# but numba's default threading layer is libgomp, and vLLM's n-gram drafter runs a numba parallel loop in whichever
# process proposes (tests/vllm/test_spec_decode.py does in the test process). A core forked after that hung in its
# first torch op (CI, 2026-11-28). numba's workqueue layer is its fork-safe one. The tests of how users' processes
# start and stop (test_shutdown, the wheel) run them as users do.
SPAWN_AS_USERS_DO = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
if os.environ.get("OMP_NUM_THREADS") == "1":
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue"  # read when numba is imported; set here too if it already was
    if "numba" in sys.modules:
        sys.modules["numba"].config.THREADING_LAYER = "workqueue"


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
