"""Pinned model files: verification accepts matching files and rejects a one-byte change; the
pinned cross-encoder is resolved from a folder or the HF cache, never silently replaced; the
STAND-IN is deterministic and has the pinned architecture."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from rerank_study.core.errors import MissingInputError, PinMismatchError
from rerank_study.reranker import models

MODEL_PINS = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())
CE_FILES = sorted(MODEL_PINS["cross_encoder"]["files"])


def fake_model_folder(tmp_path) -> tuple[Path, dict]:
    """A folder with the pinned file NAMES (small stand-in contents) and pins computed by hashlib."""
    folder = tmp_path / "model"
    folder.mkdir()
    for i, name in enumerate(CE_FILES):
        (folder / name).write_bytes(f"file {name} #{i}\n".encode() * 50)
    pins = json.loads(json.dumps(MODEL_PINS["cross_encoder"]))
    pins["files"] = {n: {"sha256": hashlib.sha256((folder / n).read_bytes()).hexdigest()} for n in CE_FILES}
    return folder, pins


def test_lockfile_guard_pinned_model_files_and_revision_are_the_ones_of_pins_md():
    """Guards an EDIT of lockfiles/model_pins.json (not code): the values are copied from
    ../shared/pins.md."""
    assert CE_FILES == ["config.json", "model.safetensors", "special_tokens_map.json", "tokenizer.json",
                        "tokenizer_config.json", "vocab.txt"]
    assert MODEL_PINS["cross_encoder"]["revision"] == "233902d25c440f23af6f7d6e94d2946bac0bee0a"
    assert MODEL_PINS["cross_encoder"]["files"]["model.safetensors"]["sha256"] == \
        "821d1aa69520101d6e0737f78a042ae25b19e5cb9160701909d10434f4aeb0ae"


def test_verification_accepts_matching_and_rejects_one_byte_change(tmp_path):
    folder, pins = fake_model_folder(tmp_path)
    assert set(models.verify_files(folder, pins["files"], "ce", "test")) == set(CE_FILES)
    p = folder / "model.safetensors"
    data = bytearray(p.read_bytes())
    data[10] ^= 0x01
    p.write_bytes(bytes(data))
    with pytest.raises(PinMismatchError) as exc:
        models.verify_files(folder, pins["files"], "ce", "test")
    msg = str(exc.value)
    assert "model.safetensors" in msg and pins["files"]["model.safetensors"]["sha256"] in msg
    assert hashlib.sha256(bytes(data)).hexdigest() in msg


def test_resolve_from_local_folder_copies_verified_files(tmp_path):
    folder, pins = fake_model_folder(tmp_path)
    meta = models.resolve_pinned_cross_encoder(pins, tmp_path / "dest", model_dir=str(folder),
                                               allow_download=False)
    assert meta["kind"] == "pinned" and meta["identity"] == f"{pins['repo']}@{pins['revision']}"
    assert meta["source"] == f"local folder {folder}"
    for n in CE_FILES:
        assert (tmp_path / "dest" / n).read_bytes() == (folder / n).read_bytes()
    assert models.load_model_meta(tmp_path / "dest")["weights_sha256"] == \
        pins["files"]["model.safetensors"]["sha256"]


def test_resolve_from_local_folder_with_a_bad_file_stops(tmp_path):
    folder, pins = fake_model_folder(tmp_path)
    (folder / "vocab.txt").write_bytes(b"other vocabulary\n")
    with pytest.raises(PinMismatchError, match="vocab.txt"):
        models.resolve_pinned_cross_encoder(pins, tmp_path / "dest", model_dir=str(folder),
                                            allow_download=False)
    assert not (tmp_path / "dest" / "MODEL.json").exists()


def test_resolve_from_the_hugging_face_cache_at_the_pinned_revision(tmp_path, monkeypatch):
    folder, pins = fake_model_folder(tmp_path)
    hub = tmp_path / "hub"
    repo_dir = hub / ("models--" + pins["repo"].replace("/", "--"))
    snap = repo_dir / "snapshots" / pins["revision"]
    snap.mkdir(parents=True)
    for n in CE_FILES:
        shutil.copy(folder / n, snap / n)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(pins["revision"])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    meta = models.resolve_pinned_cross_encoder(pins, tmp_path / "dest", model_dir="", allow_download=False,
                                               hf_cache_dir=hub)
    assert meta["source"].startswith("Hugging Face cache")
    assert (tmp_path / "dest" / "model.safetensors").read_bytes() == \
        (folder / "model.safetensors").read_bytes()


def test_unavailable_model_stops_with_instructions_and_no_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingInputError) as exc:
        models.resolve_pinned_cross_encoder(MODEL_PINS["cross_encoder"], tmp_path / "dest", model_dir="",
                                            allow_download=True, hf_cache_dir=tmp_path / "empty-hub")
    msg = str(exc.value)
    assert "model_dir=" in msg and "Hugging Face cache" in msg and "scorer=stand-in" in msg
    assert "233902d25c440f23af6f7d6e94d2946bac0bee0a" in msg
    assert not (tmp_path / "dest").exists()


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    a = tmp_path_factory.mktemp("standin_a")
    meta = models.build_standin(MODEL_PINS["bi_encoder"], MODEL_PINS["cross_encoder"], a, 110, 0.02)
    return a, meta


def test_standin_is_deterministic_and_labelled(standin, tmp_path):
    a, meta = standin
    meta_b = models.build_standin(MODEL_PINS["bi_encoder"], MODEL_PINS["cross_encoder"], tmp_path, 110, 0.02)
    assert meta_b["files"] == meta["files"] and meta_b["identity"] == meta["identity"]
    assert meta["identity"].startswith("STAND-IN:") and models.is_standin(meta)
    other = models.build_standin(MODEL_PINS["bi_encoder"], MODEL_PINS["cross_encoder"], tmp_path / "s2", 111,
                                 0.02)
    assert other["weights_sha256"] != meta["weights_sha256"]  # the head seed matters


def test_standin_architecture_matches_the_pinned_cross_encoder(standin):
    from transformers import AutoConfig

    a, _ = standin
    cfg = AutoConfig.from_pretrained(str(a))
    arch = MODEL_PINS["cross_encoder"]["architecture"]
    assert cfg.architectures == ["BertForSequenceClassification"]
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size,
            cfg.num_labels, cfg.max_position_embeddings, cfg.vocab_size) == (6, 384, 12, 1536, 1, 512, 30522)
    assert arch["num_hidden_layers"] == 6 and arch["hidden_size"] == 384
    # the tokenizer vocabulary is the cross-encoder's own (same sha256 as its pinned vocab.txt)
    assert hashlib.sha256((a / "vocab.txt").read_bytes()).hexdigest() == \
        MODEL_PINS["cross_encoder"]["files"]["vocab.txt"]["sha256"]


def test_standin_encoder_weights_are_all_minilm(standin):
    from safetensors.torch import load_file

    a, _ = standin
    ours = load_file(str(a / "model.safetensors"))
    src = load_file(str(models.gt_model_dir() / "model.safetensors"))
    for k, v in src.items():
        if k == "embeddings.position_ids":
            continue
        assert (ours[f"bert.{k}"] == v).all(), k
    assert ours["classifier.weight"].shape == (1, 384)


def test_load_model_meta_reverifies_files(standin, tmp_path):
    a, _ = standin
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    (copy / "config.json").write_text((copy / "config.json").read_text().replace("384", "385", 1))
    with pytest.raises(PinMismatchError, match="config.json"):
        models.load_model_meta(copy)


def test_a_verified_folder_is_held_to_the_lock_folders_pins_not_to_its_own_model_json():
    path = ROOT / "lockfiles" / "model_pins.json"
    pins = json.loads(path.read_text(encoding="utf-8"))
    files = {n: p["sha256"] for n, p in pins["cross_encoder"]["files"].items() if not n.startswith("_")}
    meta = {"kind": "pinned", "identity": "repo@rev", "files": dict(files)}
    models.check_pinned(meta, pins, path)
    for changed in ({**files, "model.safetensors": "0" * 64}, {**files, "extra.bin": "1" * 64},
                    {n: h for n, h in files.items() if n != "vocab.txt"}):
        with pytest.raises(PinMismatchError) as exc:
            models.check_pinned({**meta, "files": changed}, pins, path)
        want = f"PIN MISMATCH for the cross-encoder folder's files (repo@rev): {path}"
        assert str(exc.value).startswith(want)
        assert "delete it and rerun" in str(exc.value)
    standin = {"kind": "stand-in", "head_seed": pins["standin"]["head_seed"],
               "head_std": pins["standin"]["head_std"], "files": dict(pins["standin"]["files"])}
    models.check_pinned(standin, pins, path)
    with pytest.raises(PinMismatchError, match="the STAND-IN's files"):
        models.check_pinned({**standin, "files": {**standin["files"], "config.json": "2" * 64}}, pins, path)
