"""The audit's own reading of a model's config.json (scripts/audit/anchor/model_config.py): the lock folder's
architecture block must be the verified model folder's config.json, fact by fact; num_labels as transformers'
PretrainedConfig reads it (checked against transformers itself)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import audit_module

MC = audit_module("anchor.model_config")
LOCK = Path(__file__).resolve().parents[2] / "lockfiles"
ARCH = json.loads((LOCK / "model_pins.json").read_text(encoding="utf-8"))["cross_encoder"]["architecture"]
CONFIG = {"architectures": ["BertForSequenceClassification"], "hidden_size": 384, "intermediate_size": 1536,
          "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 6,
          "vocab_size": 30522, "id2label": {"0": "LABEL_0"}, "model_type": "bert"}


@pytest.mark.parametrize("labels", [{"id2label": {"0": "a"}}, {"id2label": {"0": "a", "1": "b", "2": "c"}},
                                    {"num_labels": 3}, {}])
def test_num_labels_is_read_as_transformers_reads_it(labels):
    from transformers import BertConfig

    cfg = {k: v for k, v in CONFIG.items() if k != "id2label"} | labels
    assert MC.config_facts(cfg)["num_labels"] == BertConfig(**cfg).num_labels


def _want(tmp_path, block):
    (tmp_path / "model_pins.json").write_text(json.dumps({"cross_encoder": {"architecture": block}}))
    anchor = SimpleNamespace(lockdir=tmp_path, lock=lambda name: json.loads((tmp_path / name).read_text()))
    return SimpleNamespace(anchor=anchor)


def test_the_lock_block_must_be_the_folders_config_fact_by_fact(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    au = audit_module("core.bookkeeping").Audit()
    assert MC.architecture_ok(au, "reinfer", model, _want(tmp_path, ARCH))  # the committed block: the model's
    assert au.checks["reinfer"] == {"checked": len(MC.KEYS), "failures": []}
    au = audit_module("core.bookkeeping").Audit()
    forged = {**ARCH, "num_attention_heads": 6, "num_hidden_layers": 6.0, "num_labels": True}  # 6.0 is 6
    del forged["vocab_size"], forged["max_position_embeddings"]
    (model / "config.json").write_text(json.dumps({k: v for k, v in CONFIG.items()
                                                   if k != "max_position_embeddings"}))
    assert not MC.architecture_ok(au, "reinfer", model, _want(tmp_path, forged))
    item = "cross_encoder.architecture.{} (the model folder's config.json)".format
    assert [(f["item"], f["expected"], f["found"]) for f in au.checks["reinfer"]["failures"]] == [
        (item("max_position_embeddings"), "absent from config.json", "missing"),  # absent on both sides
        (item("num_attention_heads"), 12, 6),
        (item("num_labels"), 1, True),
        (item("vocab_size"), 30522, "missing"),
    ]
