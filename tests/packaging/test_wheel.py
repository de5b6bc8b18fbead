"""The package as users install it: a built wheel in a fresh virtual environment, imported from outside the
checkout. It finds its configs (package data), loads a profile, builds a tiny model on the simulator and decodes,
with the same logits as the checkout; its vLLM entry points are declared. Development tooling (tt_checks) is not
shipped."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import torch

from tests.models.tiny import make_tiny_model

ROOT = Path(__file__).resolve().parents[2]

# Run in the wheel's environment, from a folder outside the checkout: prefill one prompt, one decode step.
SCRIPT = """
import json, sys
from pathlib import Path
import torch
import generator_vllm, tt_models
from tt_models.backend import get_ttnn
from tt_models.config import load_optimizations
from tests_free_decode import decode

model_dir, out = sys.argv[1], sys.argv[2]
profile = load_optimizations("performance")
logits = decode(model_dir)
Path(out).write_text(json.dumps({"tt_models": tt_models.__file__, "generator_vllm": generator_vllm.__file__,
                                 "profile": profile.name, "logits": logits.tolist()}))
"""

# The same steps, importable here (from the checkout) and there (from the wheel).
DECODE = '''
import torch
from transformers import AutoConfig

from generator_vllm import TTLlamaForCausalLM
from tt_models.backend import get_ttnn


def decode(model_dir):
    ttnn = get_ttnn()
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 1), trace_region_size=1 << 24)
    try:
        model = TTLlamaForCausalLM.initialize_vllm_model(AutoConfig.from_pretrained(model_dir), mesh, 32, 256,
                                                         model_path=model_dir)
        a = model.model.args
        kv = model.allocate_kv_cache((16, a.n_kv_heads, 32, a.head_dim), torch.bfloat16, a.n_layers)
        prompt = torch.tensor([[5, 17, 301, 42, 7]], dtype=torch.int32)
        table = torch.zeros(32, 8, dtype=torch.int32)
        table[0] = torch.arange(8) + 1
        first = model.prefill_forward(prompt, table[:1], kv, [5])[0, 0].argmax()
        tokens = torch.zeros(32, 1, dtype=torch.int32)
        tokens[0] = first
        pos = torch.full((32,), -1, dtype=torch.int32)
        pos[0] = 5
        return model.decode_forward(tokens, pos, table, kv, enable_trace=True)[0, 0].float()
    finally:
        ttnn.close_mesh_device(mesh)
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy of the checkout's files (git's view: tracked and new, not ignored), so that no build/ left
    # in the checkout by an earlier build can add stale modules.
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(src)], check=True, cwd=out)
    (path,) = out.glob("tt_vllm_adapter-*.whl")
    return path


def test_the_wheel_ships_the_runtime_and_its_configs_not_the_dev_tools(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.split("/")[0] for n in names}
    assert {"tt_models", "vllm_patches", "generator_vllm.py", "tt_describe.py"} <= shipped
    assert "tt_checks" not in shipped and "tests" not in shipped and "scripts" not in shipped
    configs = sorted(n for n in names if n.startswith("tt_models/configs/"))
    in_checkout = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tt_models" / "configs").rglob("*.yaml"))
    assert configs == in_checkout
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "tt = vllm_patches:register_platform" in text and "vllm.general_plugins" in text


def test_the_installed_wheel_decodes_from_outside_the_checkout(wheel, tmp_path, monkeypatch):
    """A fresh venv holding only the wheel (its dependencies come from this environment's site-packages through a
    .pth file, not the checkout), run from a folder the checkout is not in."""
    monkeypatch.setenv("TT_VLLM_CACHE", str(tmp_path / "cache"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # Dependencies only: this environment's site-packages, whose own .pth files (the checkout's editable install)
    # are not processed from a path entry.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "tests_free_decode.py").write_text(DECODE)
    model_dir = make_tiny_model("llama_gqa", tmp_path / "models")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TT_BACKEND="sim")
    result = tmp_path / "result.json"
    run = subprocess.run([str(python), "-c", SCRIPT, str(model_dir), str(result)], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    got = json.loads(result.read_text())
    for module in ("tt_models", "generator_vllm"):
        assert Path(got[module]).is_relative_to(site), got[module]  # the wheel's copy, not the checkout's
    assert got["profile"] == "performance"

    # The checkout computes the same logits, bit for bit.
    sys.path.insert(0, str(work))
    try:
        from tests_free_decode import decode

        here = decode(str(model_dir))
    finally:
        sys.path.remove(str(work))
        sys.modules.pop("tests_free_decode", None)
    assert torch.equal(torch.tensor(got["logits"], dtype=torch.float32), here)
