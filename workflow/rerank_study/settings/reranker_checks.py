"""Parse-time checks of a study's reranker (``studies.check_study`` calls ``check_reranker`` before any
job): a run-file reranker's pinned run (``reranker_run.check_study``), or a cross-encoder's pins - one output
logit or a declared ``label_index`` -, a scorer that can run it, and a ``model_dir`` holding the pinned files;
with ``repin=model`` the model to pin (``model_pinning.check_request``)."""

from __future__ import annotations

from pathlib import Path

from ..core import layout
from ..core.errors import fail_study
from ..core.fileio import read_json
from ..core.names import RUN_FILE
from ..reranker import model_pinning, reranker_run


def reranker_outputs(ce_pins: dict) -> int:
    return int(ce_pins["architecture"]["num_labels"])


def check_model_pins(cfg: dict, lockdir) -> dict:
    """The study's reranker is pinned (repo, revision, every file), with one output logit or a declared
    index."""
    st, path = cfg["study"], Path(lockdir) / layout.MODEL_PINS
    if not path.is_file():
        fail_study(st["name"], path, f"reranker {st['reranker']!r} has no pins in this study's lock folder.",
                   "write <lockdir>/model_pins.json: cross_encoder {repo, revision, files {name: {bytes, "
                   "sha256}}, weights, architecture (from the model's config.json)}.")
    ce = read_json(path).get("cross_encoder")
    if not ce or ce.get("repo") != st["reranker"]:
        fail_study(st["name"], path, f"study.reranker is {st['reranker']!r} but the pinned cross-encoder is "
                   f"{(ce or {}).get('repo')!r}.", "name the pinned model in study.reranker, or pin the "
                   "model you mean.")
    for key in ("revision", "files", "weights", "architecture"):
        if not ce.get(key):
            fail_study(st["name"], path,
                       f"cross_encoder.{key} is missing.", "pin the model completely (repo, "
                       "revision, the sha256 of each file, the weights file, the architecture from its "
                       "config.json).")
    n_out, idx = reranker_outputs(ce), st["label_index"]
    if n_out > 1 and idx is None:
        fail_study(st["name"], path,
                   f"the model has {n_out} output logits and study.label_index is not declared.",
                   f"declare which logit is the relevance score: study.label_index: <0..{n_out - 1}>.")
    if idx is not None and not 0 <= idx < n_out:
        fail_study(st["name"], path, f"study.label_index {idx} is not one of the model's {n_out} outputs.",
                   f"use an index in 0..{n_out - 1} (or null for a one-logit model).")
    return ce


def check_scorer(cfg: dict, ce: dict, default_ce: dict | None) -> None:
    """The STAND-IN has all-MiniLM-L6-v2's shape: a study whose reranker has another shape must score with its
    pinned model (a command-line scorer=stand-in applies to every study that does not set its own scorer)."""
    if cfg["scorer"] != "stand-in" or default_ce is None:
        return
    mine, minilm = ce["architecture"], default_ce["architecture"]
    differ = [k for k in ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
                          "vocab_size")
              if mine.get(k) != minilm.get(k)]
    if differ:
        fail_study(cfg["study"]["name"], cfg.get("study_file") or "config/config.yaml",
                   "scorer is stand-in, but "
                   f"the STAND-IN has all-MiniLM-L6-v2's shape and {ce['repo']} differs in "
                   f"{', '.join(differ)}.",
                   "set scorer: pinned (and model_dir: <its files>) in this study's file.")


def check_reranker(cfg: dict, lockdir, repin: set, default_model_pins=None) -> None:
    """The study's reranker: a run file (``reranker_run.check_study``), or a cross-encoder pinned with one
    logit or a declared index, runnable by the scorer chosen (repin=model: the model to pin; model_dir: the
    pinned files)."""
    if cfg["study"]["reranker_kind"] == RUN_FILE:
        return reranker_run.check_study(cfg, lockdir, repin)
    if "reranker_run" in repin:
        fail_study(cfg["study"]["name"], cfg.get("study_file") or "config/config.yaml",
                   "repin=reranker_run pins a run-file "
                   "reranker's run, and study.reranker_kind is cross-encoder.",
                   "set study.reranker_kind: run in the study "
                   "file (its reranker is then the run), or pin the cross-encoder with repin=model.")
    if "model" in repin:
        model_pinning.check_request(cfg, lockdir)
        return
    if repin and not (Path(lockdir) / layout.MODEL_PINS).is_file():
        # pinning the data, splits or candidates: the model is pinned when a run needs it (repin=model)
        return
    ce = check_model_pins(cfg, lockdir)
    default = (read_json(default_model_pins) if default_model_pins and Path(default_model_pins).is_file()
               else None)
    check_scorer(cfg, ce, (default or {}).get("cross_encoder"))
    if cfg["model_dir"] and cfg["scorer"] == "pinned" and not repin:
        model_pinning.check_model_dir(cfg, ce)
