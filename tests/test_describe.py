"""`tt-describe`: what a real checkpoint becomes on a device, from its config alone. The printed program configs must
be the ones derived from the checkpoint's own widths (a width that tiles unevenly, Qwen2.5-0.5B's MLP of 152 tiles,
still gets a DRAM-sharded config that divides), and a model a device cannot hold is refused with the numbers."""

import re

from tt_describe import main
from tt_models.config.checkpoints import find_checkpoint

TILE = 32


def test_describe_prints_configs_derived_from_the_checkpoint_widths(capsys):
    cfg = find_checkpoint("Qwen2.5-0.5B-Instruct").config
    assert main(["Qwen2.5-0.5B-Instruct", "--device", "N150", "--layers", "1"]) == 0
    out = capsys.readouterr().out
    k, n = cfg["hidden_size"] // TILE, -(-cfg["intermediate_size"] // TILE)
    line = next(s for s in out.splitlines() if s.strip().startswith("w1/w3:"))
    assert f"K {k} x N {n} tiles" in line
    cores, per_k, block_w, per_n, out_cores = map(int, re.search(
        r"input on (\d+) cores x (\d+) tiles, in0_block_w (\d+), per_core_N (\d+) -> output on (\d+) cores",
        line).groups())
    # The rules the device enforces on a DRAM-sharded matmul: K split evenly over the input cores, in0_block_w
    # dividing the per-core K, N covered by the output cores.
    assert cores * per_k == k and per_k % block_w == 0 and per_n * out_cores >= n and n % out_cores == 0
    assert "memory per chip: weights" in out and "tokens per user at batch 32" in out


def test_describe_refuses_a_model_the_device_cannot_hold(capsys):
    assert main(["Llama-3.1-70B-Instruct", "--device", "N150"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"cannot run on N150: the model does not fit a \(1, 1\) mesh: its weights take [\d.]+ GiB per "
                     r"chip on one chip, a chip has [\d.]+ GiB of DRAM free", out), out
