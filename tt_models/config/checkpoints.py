"""The checkpoint matrix (configs/checkpoints.yaml): the published config.json values of the real checkpoints of every
supported family, by hub id. Tests, the describe tool and the capacity table build these models with their real widths
(random or placed-only weights, fewer layers where asked) from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema import CONFIG_ROOT, ConfigError, check_keys, read_yaml

_KEYS = ("config", "source", "family_note")
_FULL = "full_attention"


@dataclass(frozen=True)
class Checkpoint:
    hub_id: str
    config: dict[str, Any]  # the config.json keys as published
    source: str

    @property
    def short_name(self) -> str:
        return self.hub_id.rsplit("/", 1)[-1]

    def hf_config(self, n_layers: int | None = None, vocab_size: int | None = None) -> Any:
        """transformers' config of this checkpoint (its model_type's class, the published values; fields it does not
        publish take the class defaults, as when transformers reads the real config.json), optionally with fewer
        layers or a smaller vocabulary."""
        from transformers import AutoConfig

        values = dict(self.config)
        model_type = values.pop("model_type")
        if n_layers is not None:
            # Per-layer attention kinds (Gemma 3's 5 sliding : 1 full, whether published as layer_types or as a
            # pattern): the first n layers' kinds, the last of them a full-attention layer when the checkpoint has
            # any and n >= 2, so that a cell of two layers runs both kinds (and both RoPE settings).
            types = getattr(AutoConfig.for_model(model_type, **values), "layer_types", None)
            if types:
                picked = list(types[:n_layers])
                if n_layers >= 2 and _FULL in types and _FULL not in picked:
                    picked[-1] = _FULL
                if "layer_types" in values or picked != list(types[:n_layers]):
                    values["layer_types"] = picked
            values["num_hidden_layers"] = n_layers
            if values.get("max_window_layers") is not None:
                values["max_window_layers"] = min(values["max_window_layers"], n_layers)
        if vocab_size is not None:
            values["vocab_size"] = vocab_size
            for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
                ids = values.get(key)
                if isinstance(ids, list):
                    values[key] = [i % vocab_size for i in ids]
                elif isinstance(ids, int):
                    values[key] = ids % vocab_size
        cfg = AutoConfig.for_model(model_type, **values)
        cfg._name_or_path = self.hub_id
        return cfg


def load_checkpoints() -> dict[str, Checkpoint]:
    path = CONFIG_ROOT / "checkpoints.yaml"
    data = read_yaml(path).get("checkpoints")
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a non-empty `checkpoints` mapping")
    out = {}
    for hub_id, entry in data.items():
        where = f"{path}: {hub_id}"
        check_keys(where, entry, _KEYS, ("config", "source"))
        cfg = entry["config"]
        # A multimodal checkpoint's text_config may leave heads and vocabulary to its class's defaults (Gemma 3 4B).
        for key in ("architectures", "model_type", "hidden_size", "intermediate_size"):
            if key not in cfg:
                raise ConfigError(f"{where}: config lacks {key}")
        out[hub_id] = Checkpoint(hub_id, dict(cfg), str(entry["source"]))
    return out


def find_checkpoint(name: str) -> Checkpoint:
    """A matrix entry by hub id, or by its last part (e.g. Qwen2.5-7B-Instruct), case-insensitive."""
    ckpts = load_checkpoints()
    if name in ckpts:
        return ckpts[name]
    hits = [c for c in ckpts.values() if c.short_name.lower() == name.lower() or c.hub_id.lower() == name.lower()]
    if len(hits) != 1:
        raise ConfigError(f"{name!r} is not in the checkpoint matrix (configs/checkpoints.yaml); known: "
                          f"{', '.join(ckpts)}")
    return hits[0]
