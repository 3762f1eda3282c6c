"""The lock folder's architecture block (``model_pins.json`` ``cross_encoder.architecture``) against the
verified model folder's own ``config.json``: the facts the shape check expects and a derived backend's recipe
is made with (its fusion's ``num_heads`` and ``hidden_size``) must be the model's, whatever the block says."""

from __future__ import annotations

from pathlib import Path

from core.compare import same_value
from read.readers import read_json

ABSENT = "absent from config.json"  # a fact neither side holds is not a fact both agree on
# every fact of the block that a check or a recipe reads (the block's activation is the scorer's: raw logits)
KEYS = ("architectures", "hidden_size", "intermediate_size", "max_position_embeddings", "num_attention_heads",
        "num_hidden_layers", "num_labels", "vocab_size")


def config_facts(cfg: dict) -> dict:
    """The block's facts as a model's config.json gives them; ``num_labels`` as transformers'
    PretrainedConfig reads it: the number of ``id2label`` entries when given, else ``num_labels``, else 2."""
    facts = {k: cfg.get(k, ABSENT) for k in KEYS if k != "num_labels"}
    id2label = cfg.get("id2label")
    facts["num_labels"] = len(id2label) if id2label else int(cfg.get("num_labels", 2))
    return facts


def architecture_ok(au, check: str, model_dir: Path, want) -> bool:
    """Every fact of the lock folder's block equals the verified folder's config.json (recorded in ``au``)."""
    path = Path(model_dir) / "config.json"
    pinned = (want.anchor.lock("model_pins.json").get("cross_encoder") or {}).get("architecture") or {}
    facts = config_facts(read_json(path))  # strict JSON: no repeated key, no NaN
    ok, where = True, str(want.anchor.lockdir / "model_pins.json")
    for key in KEYS:
        same = key in pinned and same_value(pinned[key], facts[key])
        ok &= au.check(check, same, where, f"cross_encoder.architecture.{key} (the model folder's "
                       "config.json)", facts[key], pinned.get(key, "missing"))
    return ok
