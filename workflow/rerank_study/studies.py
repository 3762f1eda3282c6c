"""Studies: one dataset x one reranker x one candidate source x one analysis, declared in config.

The default study is the ``study`` block of ``config/config.yaml`` (SciFact x
cross-encoder/ms-marco-MiniLM-L6-v2, pins in ``lockfiles/``). Another study is a YAML file
(``config/studies/<name>.yaml`` or a path) holding only what differs from config.yaml - its own
``lockdir`` among them. A study file is the whole description of its study: its values override
config.yaml AND the command line (command-line switches a study file does not set, e.g.
``smoke`` or ``scorer``, apply to every study).

``--config studies=[a,b]`` runs each study as a Snakemake module of this same workflow, under
``<results>/<study>/`` and ``<resources>/<study>/``, each with its own manifest, audit, protocol and
ledger, then writes one cross-study table.

``check_study`` is the parse-time check of a study's inputs: it runs before any job, so a bad
study stops before anything is scored, naming the study, the file and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import beir
from .config import deep_update, validate_config
from .errors import ConfigError, PipelineError
from .fileio import read_json

STUDY_DIR = Path("config") / "studies"
PER_STUDY_KEYS = ("results", "resources")  # <key>/<study name>/ in a multi-study invocation
TREC_RUN_FILE = "run.trec"                 # a study's committed TREC run: <lockdir>/candidates/run.trec


class StudyError(PipelineError):
    """A study names something that does not exist or does not fit; the message names study, file, fix."""


def parse_study_list(value) -> list[str]:
    """``studies`` from config.yaml (a list) or the command line ('[a,b]' or 'a,b')."""
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value or "").strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [s.strip().strip("'\"") for s in text.split(",") if s.strip()]


def study_file(name: str, root) -> Path:
    """A study's file: a path to a .yaml file, or config/studies/<name>.yaml of this checkout."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else Path(root) / STUDY_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (Path(root) / STUDY_DIR).glob("*.yaml"))
        raise StudyError(f"UNKNOWN STUDY {name!r}: {path} does not exist. Known studies ({Path(root) / STUDY_DIR}): "
                         f"{', '.join(known)}. Fix: name one of them, give the path of a study file, or write "
                         f"{Path(root) / STUDY_DIR / (name + '.yaml')} (see config/README.md, 'Studies').")
    return path


def _load_yaml(path):
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("study"), dict) or "name" not in data["study"]:
        raise StudyError(f"STUDY FILE {path} must be a mapping with a 'study' block naming the study "
                         "(study: {name: ..., dataset: ..., ...}); see config/studies/scifact-minilm.yaml.")
    return data


PATH_KEYS = ("lockdir", "data_mirror", "data_zip", "model_dir", "trec_run")  # relative to the study file's folder


def _resolve_paths(overrides: dict, folder: Path) -> dict:
    """A study file's relative paths are relative to the file's own folder (so a study folder can move)."""
    out = dict(overrides)
    for key in PATH_KEYS:
        if out.get(key) and not Path(out[key]).is_absolute():
            out[key] = str((folder / out[key]).resolve())
    return out


AUDIT_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "audit.py"


def check_audit_reads(path) -> None:
    """The independent audit anchors a study's run to its study file with its own standard-library YAML reader
    (a subset: mappings, scalars, flow lists): a file it would read differently stops here, before any job."""
    import importlib.util

    import yaml

    spec = importlib.util.spec_from_file_location("rerank_audit", AUDIT_SCRIPT)
    audit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(audit)
    try:
        same = audit.read_simple_yaml(Path(path)) == yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        problem = "it reads other values than PyYAML"
    except audit.Unreadable as exc:
        same, problem = False, str(exc)
    if not same:
        raise StudyError(f"STUDY FILE {path}: the audit's YAML reader cannot read it ({problem}). Fix: write it as "
                         "config/config.yaml is written - nested mappings, plain scalars, lists in flow style "
                         "([10, 20]), no tabs.")


def study_config(base: dict, path) -> dict:
    """The validated config of one study (base: config.yaml + command line; the study file's values win)."""
    check_audit_reads(path)
    overrides = _resolve_paths(_load_yaml(path), Path(path).resolve().parent)
    if "studies" in overrides:
        raise StudyError(f"STUDY FILE {path}: a study cannot name other studies (key 'studies'); remove it.")
    cfg = deep_update({k: v for k, v in base.items() if k != "studies"}, overrides)
    cfg["studies"] = []
    cfg["study_file"] = str(Path(path).resolve())
    name = cfg["study"]["name"]
    for key in PER_STUDY_KEYS:
        cfg[key] = f"{base[key]}/{name}"
    try:
        return validate_config(cfg)
    except ConfigError as exc:
        raise StudyError(f"STUDY {name!r} ({path}): {exc}") from None


def module_name(study_name: str) -> str:
    """A Python identifier for the study's Snakemake module (rule names are prefixed with it)."""
    return "study_" + re.sub(r"[^A-Za-z0-9]", "_", study_name)


def qrels_names(study: dict) -> tuple[str, str]:
    """The pinned names of the development and the sealed qrels files. A dataset with ONE qrels file names it
    twice (qrels_dev == qrels_confirm): its two parts, drawn once by repin=data, are the files the study uses."""
    if study["qrels_dev"] == study["qrels_confirm"]:
        return beir.part_name(study["qrels_dev"], beir.DEV_PART), beir.part_name(study["qrels_dev"], beir.SEALED_PART)
    return study["qrels_dev"], study["qrels_confirm"]


# ---------------------------------------------------------------- parse-time input checks --
def _fail(study: str, path, problem: str, fix: str):
    raise StudyError(f"STUDY {study!r}: {problem}\n  file: {path}\n  fix: {fix}")


def check_data_pins(cfg: dict, lockdir) -> dict:
    """The study's dataset is pinned in its lockdir, with both qrels files it names."""
    st, path = cfg["study"], Path(lockdir) / "data_pins.json"
    if not path.is_file():
        _fail(st["name"], path, f"dataset {st['dataset']!r} has no pins in this study's lock folder.",
              "pin it once, knowingly: snakemake --config repin=data data_zip=/path/to/<dataset>.zip (a BEIR public "
              "dataset listed in lockfiles/datasets/beir.json is verified by its published md5 and size first), "
              "then commit the lock folder; or correct study.dataset / lockdir.")
    pins = read_json(path)
    if pins.get("dataset") != st["dataset"]:
        _fail(st["name"], path, f"study.dataset is {st['dataset']!r} but the pinned dataset is {pins.get('dataset')!r}.",
              "name the pinned dataset in study.dataset, or point lockdir at the lock folder of the dataset you mean.")
    url = (pins.get("zip") or {}).get("url")
    if url and cfg["data"]["url"] != url:
        _fail(st["name"], path, f"data.url is {cfg['data']['url']!r} but the pinned archive is {url!r}.",
              "set data.url to the pinned archive's URL (in the study file).")
    files = pins.get("files", {})
    for role, name in zip(("qrels_dev", "qrels_confirm"), qrels_names(st)):
        if name not in files:
            _fail(st["name"], path, f"study.{role} = {st[role]!r}: {name} is not a pinned file (pinned: "
                  f"{sorted(files)}).", f"name one of the pinned qrels files in study.{role} (a dataset with one "
                  "qrels file: name it in both, and pin its drawn parts with repin=data).")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if name not in files:
            _fail(st["name"], path, f"the dataset pins have no {name}.", "re-pin the dataset with repin=data.")
    if not files[qrels_names(st)[1]].get("sealed"):
        _fail(st["name"], path, f"{qrels_names(st)[1]} (study.qrels_confirm) is not marked \"sealed\": true.",
              "the confirmation judgements must be the sealed file; correct study.qrels_confirm.")
    return pins


def reranker_outputs(ce_pins: dict) -> int:
    return int(ce_pins["architecture"]["num_labels"])


def check_model_pins(cfg: dict, lockdir) -> dict:
    """The study's reranker is pinned (repo, revision, every file), with one output logit or a declared index."""
    st, path = cfg["study"], Path(lockdir) / "model_pins.json"
    if not path.is_file():
        _fail(st["name"], path, f"reranker {st['reranker']!r} has no pins in this study's lock folder.",
              "write <lockdir>/model_pins.json: cross_encoder {repo, revision, files {name: {bytes, sha256}}, weights, "
              "architecture (from the model's config.json)}.")
    ce = read_json(path).get("cross_encoder")
    if not ce or ce.get("repo") != st["reranker"]:
        _fail(st["name"], path, f"study.reranker is {st['reranker']!r} but the pinned cross-encoder is "
              f"{(ce or {}).get('repo')!r}.", "name the pinned model in study.reranker, or pin the model you mean.")
    for key in ("revision", "files", "weights", "architecture"):
        if not ce.get(key):
            _fail(st["name"], path, f"cross_encoder.{key} is missing.", "pin the model completely (repo, revision, "
                  "the sha256 of each file, the weights file, the architecture from its config.json).")
    n_out, idx = reranker_outputs(ce), st["label_index"]
    if n_out > 1 and idx is None:
        _fail(st["name"], path, f"the model has {n_out} output logits and study.label_index is not declared.",
              f"declare which logit is the relevance score: study.label_index: <0..{n_out - 1}>.")
    if idx is not None and not 0 <= idx < n_out:
        _fail(st["name"], path, f"study.label_index {idx} is not one of the model's {n_out} outputs.",
              f"use an index in 0..{n_out - 1} (or null for a one-logit model).")
    return ce


def check_candidate_source(cfg: dict, lockdir, repin: set) -> None:
    """The study's candidates exist where its source says (unless this invocation freezes them)."""
    st = cfg["study"]
    if "candidates" in repin:
        if st["candidates"] == "trec" and not cfg["trec_run"]:
            _fail(st["name"], cfg["trec_run"] or "(trec_run not set)", "study.candidates is 'trec' and repin=candidates "
                  "needs the run to freeze.", "add --config trec_run=/path/to/your.run (TREC format).")
        return
    # (the table itself is a committed input checked in common.smk, after the split lists: data -> splits -> candidates)
    if not (Path(lockdir) / "splits" / "dev.txt").is_file():
        return  # common.smk names the missing split lists first
    wanted = ["candidates.tsv", TREC_RUN_FILE] if st["candidates"] == "trec" else []
    for name in wanted:
        path = Path(lockdir) / "candidates" / name
        if not path.is_file():
            _fail(st["name"], path, f"the study's {st['candidates']} candidates are not in its lock folder.",
                  "freeze them once: snakemake --config repin=candidates" + (" trec_run=/path/to/your.run"
                                                                            if st["candidates"] == "trec" else "")
                  + ", then commit the lock folder.")
    derived = Path(lockdir) / "derived_pins.json"
    pin = read_json(derived).get("candidates") if derived.is_file() else None
    if pin is None:
        return  # the run's own check names the missing pin (rule run_inputs)
    if pin.get("source", "frozen") != st["candidates"]:
        _fail(st["name"], derived, f"study.candidates is {st['candidates']!r} but the frozen candidates came from "
              f"{pin.get('source', 'frozen')!r}.", "correct study.candidates, or re-freeze: --config repin=candidates.")
    if pin["params"]["depth"] < cfg["candidates"]["depth"]:
        _fail(st["name"], Path(lockdir) / pin["file"], f"the frozen candidates hold {pin['params']['depth']} per query, "
              f"fewer than candidates.depth {cfg['candidates']['depth']}.",
              "freeze a deeper candidate list (--config repin=candidates ...), or lower candidates.depth knowingly.")


def check_study(cfg: dict, lockdir, repin: set) -> None:
    """Every parse-time check of a study's inputs (before any job runs)."""
    if "data" not in repin:
        check_data_pins(cfg, lockdir)
    check_model_pins(cfg, lockdir)
    if not repin or "candidates" in repin:  # (splits are re-pinned before any candidates exist)
        check_candidate_source(cfg, lockdir, repin)


# ------------------------------------------------------------------------ the cross-study table --
CROSS_STUDY_COLUMNS = ("study", "dataset", "reranker", "scorer", "run", "n_queries", "n_groups",
                       "rrf_mean", "ce_mean", "blend_mean", "primary", "primary_delta",
                       "primary_grouped_lo", "primary_grouped_hi", "audit")


def cross_study_row(cfg: dict, summary: dict, audit: dict, run: str) -> dict:
    """One study's line of the cross-study table, read from its summary.json and audit.json."""
    primary = summary["primary"]
    comp = summary["comparisons"][primary]
    lo, hi = comp["grouped_interval"]
    methods = summary["methods"]
    return {"study": cfg["study"]["name"], "dataset": cfg["study"]["dataset"], "reranker": cfg["study"]["reranker"],
            "scorer": summary["scorer"], "run": run, "n_queries": summary["n_queries"], "n_groups": summary["n_groups"],
            "rrf_mean": methods["rrf"]["mean"], "ce_mean": methods["ce"]["mean"], "blend_mean": methods["blend"]["mean"],
            "primary": f"{primary} ({summary['metric']})", "primary_delta": comp["mean"],
            "primary_grouped_lo": lo, "primary_grouped_hi": hi,
            "audit": "PASSED" if audit.get("ok") is True else "FAILED"}
