"""repin=model's library (rerank_study.reranker.model_pinning): the pins it writes for the tiny reranker
equal the
committed hand-written ones (tests/data/studies/synthetic/lockfiles/model_pins.json, made by
make_tiny_reranker.py) but for the free-text `_comment`; a Hugging Face cache resolves a ref to the commit it
points at, and a revision it does not hold stops naming what it holds; existing pins are never overwritten; a
model the scorer cannot run is refused naming what is missing; a model_dir whose files differ from the pins
stops naming the file and both sha256."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from conftest import STUDY_DIR, TINY_REPO, read_json

from rerank_study.reranker import model_pinning

COMMITTED = STUDY_DIR / "synthetic" / "lockfiles" / "model_pins.json"
REVISION = "seeded-20261130"


def cfg(**kw) -> dict:
    return {"study": {"name": "tiny-test", "reranker": TINY_REPO}, "revision": REVISION, "model_dir": "",
            "hf_cache": "", **kw}


def test_the_pins_of_the_tiny_reranker_equal_the_committed_hand_written_ones(tiny_models):
    pins = model_pinning.model_pins(tiny_models[1], TINY_REPO, REVISION, "local folder")
    assert pins["cross_encoder"] == read_json(COMMITTED)["cross_encoder"]
    # the one difference: the free-text comment says who wrote the pins
    assert set(pins) == set(read_json(COMMITTED)) == {"_comment", "cross_encoder"}
    weights = pins["cross_encoder"]["files"]["model.safetensors"]
    raw = (tiny_models[1] / "model.safetensors").read_bytes()
    assert weights["sha256"] == hashlib.sha256(raw).hexdigest()


def test_the_three_label_model_pins_num_labels_three(tiny_models):
    pins = model_pinning.model_pins(tiny_models[3], TINY_REPO, f"{REVISION}-3labels", "local folder")
    assert pins["cross_encoder"]["architecture"]["num_labels"] == 3
    assert pins["cross_encoder"] == read_json(STUDY_DIR / "model_pins_3labels.json")["cross_encoder"]


def test_a_model_the_scorer_cannot_run_is_named_with_what_is_missing(tmp_path, tiny_models):
    folder = tmp_path / "m"
    shutil.copytree(tiny_models[1], folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    for name in ("vocab.txt", "tokenizer.json"):
        (folder / name).unlink()
    config = json.loads((folder / "config.json").read_text())
    config.update(architectures=["RobertaModel"], type_vocab_size=1)
    del config["hidden_size"]
    (folder / "config.json").write_text(json.dumps(config))
    assert model_pinning.scorer_problems(folder) == [
        "model.safetensors is missing (pickled pytorch_model.bin weights are never loaded: convert them to "
        "safetensors)",
        "no tokenizer vocabulary (one of tokenizer.json, vocab.txt, vocab.json, sentencepiece.bpe.model, "
        "spiece.model)",
        "config.json architectures ['RobertaModel'] has no ...ForSequenceClassification (a cross-encoder's "
        "head)",
        "config.json has no hidden_size (the shape check needs it)",
        "config.json type_vocab_size 1 (model_type bert): the scorer feeds token_type_ids, a model without "
        "segment embeddings cannot take them"]
    with pytest.raises(model_pinning.ModelPinError) as exc:
        model_pinning.check_request(cfg(model_dir=str(folder)), tmp_path / "lock")
    msg = str(exc.value)
    assert f"file: {folder}" in msg and "found: model.safetensors is missing" in msg
    assert "fix: pin a model" in msg
    assert model_pinning.scorer_problems(tiny_models[1]) == []


def test_existing_pins_are_never_overwritten_and_a_revision_is_required(tmp_path, tiny_models):
    (tmp_path / "model_pins.json").write_text("{}")
    with pytest.raises(model_pinning.ModelPinError, match="found: the file exists"):
        model_pinning.check_request(cfg(model_dir=str(tiny_models[1])), tmp_path)
    with pytest.raises(model_pinning.ModelPinError, match="found: revision not set"):
        model_pinning.check_request(cfg(model_dir=str(tiny_models[1]), revision=""), tmp_path / "new")
    with pytest.raises(model_pinning.ModelPinError, match="found: no such folder"):
        model_pinning.check_request(cfg(model_dir=str(tmp_path / "absent")), tmp_path / "new")


def hub_cache(tmp_path, model_dir, commit="0123456789abcdef0123456789abcdef01234567"):
    """A Hugging Face hub cache holding the model at one commit, with the ref 'main' pointing at it."""
    repo = tmp_path / "hub" / f"models--{TINY_REPO.replace('/', '--')}"
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return tmp_path / "hub", commit


def test_a_cache_resolves_a_ref_to_its_commit_and_names_what_it_holds_otherwise(tmp_path, tiny_models,
                                                                                 monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub, commit = hub_cache(tmp_path, tiny_models[1])
    folder, revision, source = model_pinning.check_request(cfg(hf_cache=str(hub), revision="main"),
                                                           tmp_path / "l")
    assert revision == commit
    assert folder == hub / f"models--{TINY_REPO.replace('/', '--')}" / "snapshots" / commit
    pins = model_pinning.model_pins(folder, TINY_REPO, revision, source)
    assert pins["cross_encoder"]["files"] == read_json(COMMITTED)["cross_encoder"]["files"]
    with pytest.raises(model_pinning.ModelPinError) as exc:
        model_pinning.check_request(cfg(hf_cache=str(hub), revision="v2.0"), tmp_path / "l")
    msg = str(exc.value)
    assert f"expected: revision 'v2.0' of {TINY_REPO}" in msg
    assert f"found: the cache holds ref main -> {commit}, snapshot {commit}" in msg
    assert "download: not tried (HF_HUB_OFFLINE is set)" in msg
    assert "fix: name a revision the cache holds" in msg


def test_a_model_dir_whose_files_differ_from_the_pins_is_named(tmp_path, tiny_models):
    folder = tmp_path / "m"
    shutil.copytree(tiny_models[1], folder)
    with open(folder / "vocab.txt", "a") as fh:
        fh.write("extra\n")
    ce = read_json(COMMITTED)["cross_encoder"]
    model_pinning.check_model_dir(cfg(model_dir=str(tiny_models[1])), ce)  # the pinned files: accepted
    with pytest.raises(model_pinning.ModelPinError) as exc:
        model_pinning.check_model_dir(cfg(model_dir=str(folder)), ce)
    msg = str(exc.value)
    found = hashlib.sha256((folder / "vocab.txt").read_bytes()).hexdigest()
    assert f"model_dir={folder} is not the pinned model" in msg and "vocab.txt" in msg
    assert ce["files"]["vocab.txt"]["sha256"] in msg and found in msg
    assert "point model_dir at the files" in msg
