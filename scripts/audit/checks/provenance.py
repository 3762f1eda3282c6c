"""Checks of provenance: the run used its anchor's settings, its files are the ones its manifest hashed,
its inputs are the pinned ones, and a confirmation run is the one its frozen protocol describes.

Every check is ``check_*(run, want, au)``: ``run`` says what the run's files hold (run_files.RunFiles),
``want`` what the definitions and the anchor say they must hold (expected.Expected; ``want.anchor``:
anchors.Anchor), ``au`` records every comparison (bookkeeping.Audit)."""

from __future__ import annotations

import re

from anchor.anchors import pinned_role
from core.compare import same_value
from expected.definitions import STANDIN
from read.layout import RUN_FILE
from read.readers import read_json, sha256_of, text_of

from checks.reranker_run import run_file_pin


def check_settings(run, want, au) -> None:
    """Every setting the run says it used equals its anchor (committed config / frozen protocol), as values
    (60.0 is 60; a flag must be a flag)."""
    f, anchor_path = str(run.manifest_path), want.anchor.path
    au.note("settings", f"anchor: {anchor_path}")
    for key in sorted(set(want.settings) | set(run.manifest_settings)):
        au.check("settings", same_value(run.manifest_settings.get(key, "missing"),
                                        want.settings.get(key, "missing")),
                 f, f"settings.{key} (anchor {anchor_path.name})", want.settings.get(key, "missing"),
                 run.manifest_settings.get(key, "missing"))


def check_manifest_fields(run, want, au) -> None:
    """The manifest's own fields (its artefacts and lock folder: check_layout; its settings: check_settings):
    the kind, the run's name (its folder), the protocol fields of a development run (none), and the code
    hashes written as sha256 (the code that made the run: an opening's method hash is compared with its
    protocol)."""
    m, f = run.manifest, str(run.manifest_path)
    au.check("manifest", m.get("kind") in ("development", "confirmation"), f, "kind",
             "development or confirmation", m.get("kind"))
    au.check("manifest", m.get("run") == run.rundir.resolve().name, f, "run", run.rundir.resolve().name,
             m.get("run"))
    for key in ("code_sha256", "method_sha256"):
        au.check("manifest", re.fullmatch(r"[0-9a-f]{64}", str(m.get(key))) is not None, f, key, "a sha256",
                 m.get(key))
    if run.kind == "development":
        au.check("manifest", m.get("labels") == [] and m.get("protocol_sha256") is None, f,
                 "labels, protocol_sha256", "[] and null (a development run opens nothing)",
                 [m.get("labels"), m.get("protocol_sha256")])
    else:
        au.check("manifest", isinstance(m.get("labels"), list)
                 and all(isinstance(x, str) for x in m["labels"]), f,
                 "labels", "a list of label texts", m.get("labels"))


def check_manifest_hashes(run, want, au) -> None:
    for key in run.art:
        p = run.path(key)
        expected = run.art[key]["sha256"]
        if not p.exists():
            au.check("manifest_hashes", False, str(p), key, expected, "missing file")
            continue
        actual = sha256_of(p)
        au.check("manifest_hashes", actual == expected, str(p), key, expected, actual)


def _listed_sha256(run, key: str) -> str:
    return run.art[key]["sha256"] if key in run.art else "not in the manifest"


def check_lockfile_pins(run, want, au) -> None:
    anchor = want.anchor
    data_pins = anchor.lock("data_pins.json")["files"]
    derived = anchor.lock("derived_pins.json")
    src = "qrels_confirm" if run.kind == "confirmation" else "qrels_dev"
    pin_of = {"corpus": "corpus.jsonl", "queries": "queries.jsonl", src: pinned_role(data_pins, src)}
    for key, pin_name in pin_of.items():
        found = _listed_sha256(run, key)
        au.check("lockfile_pins", found == data_pins[pin_name]["sha256"], str(run.manifest_path), key,
                 data_pins[pin_name]["sha256"], found)
    for key, pin in (("split_dev", derived["splits"]["dev"]),
                     ("split_confirm", derived["splits"]["confirm"])):
        found = _listed_sha256(run, key)
        au.check("lockfile_pins", found == pin["sha256"], str(run.manifest_path), key, pin["sha256"], found)
        lock_list = anchor.lockdir / pin["path"]
        au.check("lockfile_pins", sha256_of(lock_list) == pin["sha256"], str(lock_list), key, pin["sha256"],
                 sha256_of(lock_list))
    found = _listed_sha256(run, "candidates")
    au.check("lockfile_pins", found == derived["candidates"]["sha256"], str(run.manifest_path), "candidates",
             derived["candidates"]["sha256"], found)
    if run.kind == "confirmation":
        sha_file = anchor.lockdir / "protocol.sha256"
        frozen = text_of(sha_file).split()[0]
        au.check("lockfile_pins", frozen == run.manifest.get("protocol_sha256"), str(sha_file),
                 "frozen protocol", frozen, run.manifest.get("protocol_sha256"))
        protocol = anchor.lockdir / "protocol.json"
        au.check("lockfile_pins", sha256_of(protocol) == frozen, str(protocol), "protocol.json sha256",
                 frozen, sha256_of(protocol))
    if run.reranker_kind == RUN_FILE:  # the reranker's "weights": the pinned run file's bytes
        pinned = run_file_pin(run, want)["sha256"]
        au.check("lockfile_pins", run.manifest["model_weights_sha256"] == pinned, str(run.manifest_path),
                 "the reranker's run file", pinned, run.manifest["model_weights_sha256"])
    elif run.scorer == "pinned":
        pinned = anchor.lock("model_pins.json")["cross_encoder"]["files"]["model.safetensors"]["sha256"]
        au.check("lockfile_pins", run.manifest["model_weights_sha256"] == pinned, str(run.manifest_path),
                 "model weights", pinned, run.manifest["model_weights_sha256"])


def check_protocol(run, want, au) -> None:
    """A confirmation run against its FROZEN protocol (lockdir/protocol.json, the one the manifest names),
    not against lockfiles that may have been re-pinned since: every data/split/candidate/model pin and the
    method hash (its settings: check_settings, anchored to the same protocol)."""
    if run.kind != "confirmation":
        au.note("protocol", "development run: no frozen protocol applies")
        return
    path = want.anchor.lockdir / "protocol.json"
    f, mf = str(path), str(run.manifest_path)
    au.check("protocol", sha256_of(path) == run.manifest.get("protocol_sha256"), f, "protocol.json sha256",
             run.manifest.get("protocol_sha256"), sha256_of(path))
    p = read_json(path)  # its settings are checked by check_settings (the protocol is the anchor)
    pins = {"corpus": p["data"]["corpus.jsonl"]["sha256"], "queries": p["data"]["queries.jsonl"]["sha256"],
            "qrels_confirm": p["data"][pinned_role(p["data"], "qrels_confirm")]["sha256"],
            "split_dev": p["splits"]["dev"]["sha256"], "split_confirm": p["splits"]["confirm"]["sha256"],
            "candidates": p["candidates"]["sha256"]}
    for key, pin in pins.items():
        found = _listed_sha256(run, key)
        au.check("protocol", found == pin, mf, f"pin {key}", pin, found)
    scorer = "pinned" if p["model"]["scorer"] == "pinned" else STANDIN
    au.check("protocol", run.scorer == scorer, mf, "scorer", scorer, run.scorer)
    if run.reranker_kind == RUN_FILE:  # the confirmation run submitted when the protocol was frozen
        weights = p["model"]["confirmation_run"]["sha256"]
        au.check("protocol", run.manifest.get("model_weights_sha256") == weights, mf,
                 "the frozen confirmation run",
                 weights, run.manifest.get("model_weights_sha256"))
    elif scorer == "pinned":
        weights = p["model"]["files_sha256"]["model.safetensors"]
        au.check("protocol", run.manifest.get("model_weights_sha256") == weights, mf, "model weights",
                 weights, run.manifest.get("model_weights_sha256"))
    method = p.get("method", {}).get("sha256")
    au.check("protocol", run.manifest.get("method_sha256") == method, mf, "method sha256", method,
             run.manifest.get("method_sha256"))
