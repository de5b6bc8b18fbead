"""Converts a Meta-named torch state dict into device tensors in TT layouts, cached on disk.

Each converted tensor is written once under the cache directory (keyed by the checkpoint's files, see
`weight_cache_dir`), so a second start loads the TT-layout tensors instead of re-converting and re-rounding them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from tt_models.backend import ttnn


def weight_cache_dir(model_dir: str | Path, tag: str) -> Path:
    """A cache folder that changes whenever a source weight file changes (name, size or mtime)."""
    from tt_models.checkpoint.gguf import cache_root

    root = cache_root() / "tt_weights"
    h = hashlib.sha1()
    for f in sorted(Path(model_dir).glob("*")):
        if f.suffix in (".safetensors", ".gguf", ".bin", ".json"):
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return root / f"{h.hexdigest()[:16]}-{tag}"


class WeightStore:
    def __init__(self, state_dict: dict[str, torch.Tensor], mesh_device: Any, cache_dir: Path | None) -> None:
        self.sd = state_dict
        self.device = mesh_device
        self.cache_dir = cache_dir

    def _as_tensor(self, name: str, make: Any, dtype: Any, layout: Any) -> Any:
        cache = str(self.cache_dir / name) if self.cache_dir is not None else None
        return ttnn.as_tensor(make(), dtype, layout=layout, device=self.device, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                              cache_file_name=cache)

    def has(self, name: str) -> bool:
        return name in self.sd

    def linear(self, names: list[str], dtype: Any, cache_name: str) -> Any:
        """HF/Meta [out, in] weights, concatenated on out, stored transposed as [1, 1, in, out] tiles."""
        return self._as_tensor(
            cache_name, lambda: torch.cat([self.sd[n] for n in names], dim=0).t().contiguous()[None, None],
            dtype, ttnn.TILE_LAYOUT)

    def bias(self, names: list[str], cache_name: str) -> Any:
        return self._as_tensor(cache_name, lambda: torch.cat([self.sd[n] for n in names])[None, None, None],
                               ttnn.bfloat16, ttnn.TILE_LAYOUT)

    def norm(self, name: str) -> Any:
        """RMSNorm weight as [1, 1, dim/32, 32] row-major sticks, the layout rms_norm reads."""
        return self._as_tensor(name, lambda: self.sd[name].reshape(1, 1, -1, 32), ttnn.bfloat16,
                               ttnn.ROW_MAJOR_LAYOUT)

    def embedding(self, name: str) -> Any:
        return self._as_tensor(name, lambda: self.sd[name][None, None], ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT)
