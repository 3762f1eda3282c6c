"""The audit's account of a derived backend's pin (scripts/audit/anchor/backend.py): the pin's recorded recipe
must be the documented recipe of its slot, every step with its arguments and the session, for the pinned
architecture; the audit's statement of that recipe agrees with the pipeline's
(rerank_study.reranker.backends.recipe,
written apart)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import audit_module

from rerank_study.reranker import backends

LOCK = Path(__file__).resolve().parents[2] / "lockfiles"
PINS = json.loads((LOCK / "derived_pins.json").read_text(encoding="utf-8"))["backends"]
ARCH = json.loads((LOCK / "model_pins.json").read_text(encoding="utf-8"))["cross_encoder"]["architecture"]
BACKEND = audit_module("anchor.backend")


@pytest.mark.parametrize("name", ["onnx", "onnx-int8"])
def test_the_audits_documented_recipe_is_the_pipelines_and_the_committed_pins(name):
    want = BACKEND.documented_recipe(name, ARCH)
    made = backends.recipe(name, ARCH)
    assert want == {k: made[k] for k in ("backend", "steps", "session")}
    for key, pin in PINS[name].items():
        assert BACKEND.slot_problem(name, key, pin, ARCH) is None


def _pin(name="onnx-int8"):
    return copy.deepcopy(next(iter(PINS[name].items())))


def test_a_pin_whose_recorded_recipe_is_not_the_documented_one_is_not_of_its_slot():
    key, pin = _pin()
    pin["recipe"]["steps"][2]["per_channel"] = False  # a quantisation argument the file was not made with
    want = BACKEND.documented_recipe("onnx-int8", ARCH)["steps"][2]
    assert BACKEND.slot_problem("onnx-int8", key, pin, ARCH) == (
        f"its recipe's quantisation step is {pin['recipe']['steps'][2]}, the documented recipe's is {want}")
    key, pin = _pin("onnx")
    assert BACKEND.slot_problem("onnx", key, pin, {**ARCH, "num_attention_heads": 6}).startswith(
        "its recipe's fusion step is ")
    key, pin = _pin("onnx")
    pin["recipe"]["session"]["graph_optimization_level"] = "ORT_ENABLE_BASIC"
    assert BACKEND.slot_problem("onnx", key, pin, ARCH).startswith(
        "its recipe's session is {'config_entries': {'session.intra_op.allow_spinning': '0'}, "
        "'execution_mode': 'ORT_SEQUENTIAL', 'graph_optimization_level': 'ORT_ENABLE_BASIC'")
    key, pin = _pin("onnx")
    pin["recipe"]["session"]["config_entries"]["session.intra_op.allow_spinning"] = 0  # not the string "0"
    assert BACKEND.slot_problem("onnx", key, pin, ARCH).startswith(
        "its recipe's session is {'config_entries': {'session.intra_op.allow_spinning': 0}, ")
    key, pin = _pin("onnx")
    del pin["recipe"]["session"]
    assert BACKEND.slot_problem("onnx", key, pin, ARCH) == (
        "its recipe holds ['backend', 'steps', 'versions'], a pin holds exactly "
        "['backend', 'session', 'steps', 'versions']")
    key, pin = _pin("onnx")
    pin["recipe"]["steps"].append({"step": "quantisation"})
    assert BACKEND.slot_problem("onnx", key, pin, ARCH) == (
        "its recipe's steps are ['export', 'fusion', 'quantisation'], backend 'onnx' has "
        "['export', 'fusion']")
    key, pin = _pin("onnx")
    assert BACKEND.slot_problem("onnx-int8", key, pin, ARCH) == "its recipe is backend 'onnx''s"
    assert BACKEND.slot_problem("onnx", "ab" * 32, pin, ARCH) == (
        f"its source's identity sha256 is {pin['source']['identity_sha256']}")


def test_a_pin_holds_exactly_the_recorded_keys():
    for edit, problem in (
        (lambda p: p.update(note="the file was made by hand"),
         "its pin holds ['bytes', 'file', 'note', 'recipe', 'sha256', 'source'], a pin holds exactly "
         "['bytes', 'file', 'recipe', 'sha256', 'source']"),
        (lambda p: p["recipe"].update(made_by="me"),
         "its recipe holds ['backend', 'made_by', 'session', 'steps', 'versions'], a pin holds exactly "
         "['backend', 'session', 'steps', 'versions']"),
        (lambda p: p["source"].pop("weights_sha256"),
         "its source holds ['identity', 'identity_sha256'], a pin holds exactly "
         "['identity', 'identity_sha256', 'weights_sha256']"),
        (lambda p: p["recipe"]["versions"].update(numpy="2.0"),
         "its recipe's versions holds ['numpy', 'onnx', 'onnxruntime', 'torch', 'transformers'], a pin holds "
         "exactly ['onnx', 'onnxruntime', 'torch', 'transformers']"),
        (lambda p: p.update(file="other.onnx"), "its file is 'other.onnx', the recipe writes 'model.onnx'"),
    ):
        key, pin = _pin("onnx")
        edit(pin)
        assert BACKEND.slot_problem("onnx", key, pin, ARCH) == problem


class _Run:
    """What run_records_agree reads of a run: the manifest and the scoring record."""

    def __init__(self, weights, versions):
        self.manifest, self.manifest_path = {"model_weights_sha256": weights}, Path("manifest.json")
        self._scoring = {"versions": versions}

    def measurements(self, key):
        assert key == "scoring_measurements"
        return self._scoring

    def path(self, key):
        return Path(f"{key}.json")


def test_a_pin_must_be_of_the_runs_weights_and_the_libraries_it_scored_with():
    _, pin = _pin("onnx-int8")
    versions = {**pin["recipe"]["versions"], "tokenizers": "0.23.3"}  # the run also records tokenizers
    au = audit_module("core.bookkeeping").Audit()
    assert BACKEND.run_records_agree(_Run(pin["source"]["weights_sha256"], versions), au, "reinfer", pin)
    assert au.checks["reinfer"] == {"checked": 5, "failures": []}
    au = audit_module("core.bookkeeping").Audit()
    run = _Run("ef" * 32, {**versions, "onnxruntime": "1.0.0"})
    assert not BACKEND.run_records_agree(run, au, "reinfer", pin)
    assert [(f["item"], f["expected"], f["found"]) for f in au.checks["reinfer"]["failures"]] == [
        ("the derived pin's source weights_sha256 (the manifest's model_weights_sha256)", "ef" * 32,
         pin["source"]["weights_sha256"]),
        ("versions.onnxruntime (the derived pin's recipe)", pin["recipe"]["versions"]["onnxruntime"],
         "1.0.0"),
    ]


def test_a_recipe_is_compared_by_value_and_needs_the_architectures_fusion_facts():
    key, pin = _pin("onnx-int8")
    pin["recipe"]["steps"][0]["opset"] = 18
    assert BACKEND.slot_problem("onnx-int8", key, pin, ARCH).startswith("its recipe's export step is ")
    key, pin = _pin("onnx-int8")
    pin["recipe"]["steps"][0]["opset"] = 17.0  # the same value
    assert BACKEND.slot_problem("onnx-int8", key, pin, ARCH) is None
    key, pin = _pin("onnx-int8")
    pin["recipe"]["session"]["inter_op_num_threads"] = True
    assert BACKEND.slot_problem("onnx-int8", key, pin, ARCH).startswith("its recipe's session is ")
    key, pin = _pin("onnx")
    pin["recipe"]["steps"][1]["num_heads"] = None  # a block without the fact and a pin without it agree
    no_heads = {k: v for k, v in ARCH.items() if k != "num_attention_heads"}
    assert BACKEND.slot_problem("onnx", key, pin, no_heads) == (
        "the pinned architecture's num_attention_heads is None, not a whole number")
    assert BACKEND.slot_problem("onnx", key, _pin("onnx")[1], {**ARCH, "hidden_size": 384.0}) == (
        "the pinned architecture's hidden_size is 384.0, not a whole number")


class _Want:
    """What derived_pin reads of the anchor: the backend setting and the lock folder's pin files."""

    def __init__(self, derived_pins, backend="onnx-int8"):
        self.settings = {"backend": backend}
        self._locks = {"derived_pins.json": {"backends": derived_pins},
                       "model_pins.json": json.loads((LOCK / "model_pins.json").read_text(encoding="utf-8"))}
        self.anchor = self

    lockdir = LOCK

    def lock(self, name):
        return self._locks[name]


def test_a_pin_is_keyed_by_the_identity_sha256_of_the_models_pinned_files():
    """The pipeline finds a pin by the model's identity sha256: a pin re-keyed (its source's identity sha256
    with it) names no model of the lock folder, whatever its identity text says."""
    key, pin = _pin("onnx-int8")
    identity = pin["source"]["identity"]
    assert BACKEND.lock_identity_sha256(_Want({}), identity) == key  # re-derived from model_pins.json
    assert BACKEND.derived_pin(_Want({"onnx-int8": {key: pin}}), identity) == pin
    pin["source"]["identity_sha256"] = "b" * 64
    with pytest.raises(audit_module("core.problems").Unreadable,
                       match=f"its key is not the identity sha256 of the model's pinned files in "
                             f"model_pins.json \\({key}\\)"):
        BACKEND.derived_pin(_Want({"onnx-int8": {"b" * 64: pin}}), identity)
