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


def test_describe_gives_gemmas_kv_per_user_with_and_without_the_hybrid_cache(capsys):
    # gemma-3-1b: 26 layers, 22 with a 512-token window; one KV head of 256 in bfloat8_b (1088 B per 32 x 32 tile, so
    # K and V take 2 x 256 x 1.0625 = 544 B per token per layer): 8k of whole context is 26 x 8192 x 544 B.
    assert main(["gemma-3-1b-it", "--device", "N150", "--layers", "26"]) == 0
    out = capsys.readouterr().out
    whole = next(s for s in out.splitlines() if s.strip().startswith("whole context:"))
    hybrid = next(s for s in out.splitlines() if s.strip().startswith("hybrid KV cache:"))
    mib = [[int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) MiB", line)] for line in (whole, hybrid)]
    assert mib[0][0] == round(26 * 8192 * 544 / (1 << 20))
    # vLLM's grouping (7 groups of up to 4 layers: 4 global + 22 sliding in 6 groups, 2 padding slots); a sliding
    # group keeps its window, 512 + 63 tokens, over at most 10 blocks; the global group all 128 blocks of 8k.
    assert "7 groups of up to 4 layers" in hybrid
    assert mib[1][0] == round((128 + 6 * 10) * 4 * 64 * 544 / (1 << 20))
    users = [[int(u) for u in re.findall(r"(\d+) users", line)] for line in (whole, hybrid)]
    assert all(h > 4 * w for w, h in zip(users[0], users[1], strict=True)), users


def test_describe_splits_qwen3_moes_experts_over_a_t3k(capsys):
    # Qwen3-30B-A3B: 128 experts of 768 units, 8 per token; 16 experts per chip of a T3K. Its KV: 4 KV heads of 128
    # split over 8 chips (one per chip, replicated: 4 < 8), bfloat8_b: 2 x 128 x 1.0625 = 272 B per token per layer.
    assert main(["Qwen3-30B-A3B", "--device", "T3K", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "mixture of experts in 2 of 2 layers: 128 experts of 768 units, 8 per token; 16 experts per chip" in out
    whole = next(s for s in out.splitlines() if s.strip().startswith("whole context:"))
    assert int(re.search(r"8k (\d[\d,]*) MiB", whole).group(1)) == round(2 * 8192 * 272 / (1 << 20))
    assert main(["Qwen3-30B-A3B", "--device", "N150"]) == 1
    assert "cannot run on N150: the model does not fit" in capsys.readouterr().out


def test_describe_splits_qwen2_moes_shared_expert_with_its_experts(capsys):
    # Qwen2-57B-A14B: 64 experts of 2560 units, 8 per token, and a shared expert of 20480 units; as 2x4 on a T3K
    # (its 28 heads do not split over 8 chips): 8 experts and 20480 / 8 = 2560 shared units per chip. Qwen1.5-MoE's
    # 60 experts do not split over a T3K's 8 chips: padded to 64.
    assert main(["Qwen2-57B-A14B", "--device", "T3K", "--mesh-shape", "2x4", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "64 experts of 2560 units, 8 per token; 8 experts per chip" in out
    assert "shared expert of 20480 units on every token" in out and "2560 units per chip" in out
    assert main(["Qwen1.5-MoE-A2.7B-Chat", "--device", "T3K", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "60 experts of 1408 units, 4 per token; 8 experts per chip" in out
    assert "experts padded 60 -> 64 with zero experts no token selects" in out


def test_describe_runs_gpt_oss_120b_as_tenstorrent_does_on_a_t3k(capsys):
    # gpt-oss-120b's `performance` is performance_bfp4 (its model file: tt-metal keeps GPT-OSS experts in
    # bfloat4_b), 16 of its 128 experts per chip of a T3K; 41.5 GiB per chip of an N300 is refused.
    assert main(["gpt-oss-120b", "--device", "T3K", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "profile performance (runs performance_bfp4: configs/models/gpt_oss_120b.yaml)" in out
    assert "128 experts of 2880 units, 4 per token; 16 experts per chip" in out
    assert main(["gpt-oss-120b", "--device", "N300"]) == 1
    assert "cannot run on N300: the model does not fit a (1, 2) mesh" in capsys.readouterr().out


def test_describe_routes_glm_4_5_air_as_deepseek_v3_on_a_t3k(capsys):
    # GLM-4.5-Air: a dense first layer, then 128 experts of 1408 units, 8 per token by sigmoid score + correction
    # bias (routed_scaling_factor 1.0), one ungated shared expert of 1408 units (176 per chip of a T3K, padded to 6
    # tiles), RoPE on 64 of 128 channels. All 46 layers: 13.4 GiB per chip in `performance`, refused; 9.48 in
    # `performance_bfp4` (the real ttnn's allocator on a mock T3K places the same, docs/checkpoint-matrix.md).
    assert main(["GLM-4.5-Air", "--device", "T3K", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "mixture of experts in 1 of 2 layers: 128 experts of 1408 units, 8 per token; 16 experts per chip" in out
    assert "routing: sigmoid scores, the top 8 of score + correction bias, renormalized, times 1" in out
    assert "shared expert of 1408 units on every token (ungated); 192 units per chip" in out
    assert "RoPE on the first 64 of each head's 128 channels" in out
    assert main(["GLM-4.5-Air", "--device", "T3K"]) == 1
    assert "its weights take 13.38 GiB per chip" in capsys.readouterr().out
    assert main(["GLM-4.5-Air", "--device", "T3K", "--profile", "performance_bfp4"]) == 0
    assert "memory per chip: weights 9.48 GiB of 11.94 GiB DRAM" in capsys.readouterr().out


def test_describe_splits_gpt_oss_20bs_experts_over_an_n300_and_a_t3k(capsys):
    # gpt-oss-20b (bf16): 32 experts of 2880 units, 4 per token; 16 experts per chip of an N300. Its KV: 8 KV heads of
    # 64 split over 2 chips (4 per chip), bfloat8_b: 2 x 4 x 64 x 1.0625 = 544 B per token per layer.
    assert main(["gpt-oss-20b", "--device", "N300", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "mixture of experts in 2 of 2 layers: 32 experts of 2880 units, 4 per token; 16 experts per chip" in out
    whole = next(s for s in out.splitlines() if s.strip().startswith("whole context:"))
    assert int(re.search(r"32k (\d[\d,]*) MiB", whole).group(1)) == 2 * 32768 * 544 // (1 << 20)
    # hidden 2880 is 90 tiles: over 8 chips the residual is padded to 3072 (12 tiles each), over a 2x4 mesh's 4
    # columns to 2944 (23 tiles each).
    assert main(["gpt-oss-20b", "--device", "T3K", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "residual padded 2880 -> 3072 with zero columns" in out and "residual 384 columns" in out
    assert "4 experts per chip" in out
    assert main(["gpt-oss-20b", "--device", "T3K", "--mesh-shape", "2x4", "--layers", "2"]) == 0
    out = capsys.readouterr().out
    assert "residual padded 2880 -> 2944 with zero columns" in out and "residual 736 columns" in out
