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

import json
import re
import subprocess
import sys
from pathlib import Path

from ..core import layout
from ..core.errors import ConfigError, PipelineError, StudyError, fail_study
from ..core.fileio import read_json
from ..data import beir
from .config import config_arg, deep_update, load_yaml, validate_config

STUDY_DIR = Path("config") / "studies"
PER_STUDY_KEYS = ("results", "resources")  # <key>/<study name>/ in a multi-study invocation
TREC_RUN_FILE = Path(layout.TREC_RUN).name  # a study's committed TREC run: <lockdir>/candidates/run.trec


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
        raise StudyError(f"UNKNOWN STUDY {name!r}: {path} does not exist. Known studies "
                         f"({Path(root) / STUDY_DIR}): {', '.join(known)}. Fix: name one of them, give the "
                         f"path of a study file, or write {Path(root) / STUDY_DIR / (name + '.yaml')} (see "
                         "config/README.md, 'Studies').")
    return path


def read_study_file(path) -> dict:
    """A study file's data: a mapping with a ``study`` block that names the study."""
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("study"), dict) or "name" not in data["study"]:
        raise StudyError(f"STUDY FILE {path} must be a mapping with a 'study' block naming the study "
                         "(study: {name: ..., dataset: ..., ...}); see config/studies/scifact-minilm.yaml.")
    return data


# relative to the study file's folder
PATH_KEYS = ("lockdir", "data_mirror", "data_zip", "data_dir", "model_dir", "hf_cache", "trec_run",
             "run_file")


def _resolve_paths(overrides: dict, folder: Path) -> dict:
    """A study file's relative paths are relative to the file's own folder (so a study folder can move)."""
    out = dict(overrides)
    for key in PATH_KEYS:
        if out.get(key) and not Path(out[key]).is_absolute():
            out[key] = str((folder / out[key]).resolve())
    return out


AUDIT = Path(__file__).resolve().parents[3] / "scripts" / "audit"  # the standard-library audit (a folder)


def check_audit_reads(path) -> None:
    """The independent audit anchors a study's run to its study file with its own standard-library YAML reader
    (a subset: mappings, scalars, flow lists): a file it would read differently stops here, before any job.
    The library never imports the audit: it runs it (``python -I -S scripts/audit --read-yaml FILE`` prints
    what the audit reads, as JSON) and compares that with PyYAML."""
    import yaml

    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), "--read-yaml", str(path)],
                          capture_output=True, text=True)
    if proc.returncode == 0:
        same = json.loads(proc.stdout) == yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        problem = "it reads other values than PyYAML"
    else:
        lines = proc.stderr.strip().splitlines()
        same, problem = False, lines[-1] if lines else f"{AUDIT} --read-yaml exited {proc.returncode}"
    if not same:
        raise StudyError(f"STUDY FILE {path}: the audit's YAML reader cannot read it ({problem}). Fix: write "
                         "it as config/config.yaml is written - nested mappings, plain scalars, lists in "
                         "flow style ([10, 20]), no tabs.")


def study_config(base: dict, path) -> dict:
    """The validated config of one study (base: config.yaml + command line; the study file's values win)."""
    check_audit_reads(path)
    overrides = _resolve_paths(read_study_file(path), Path(path).resolve().parent)
    if "studies" in overrides:
        raise StudyError(f"STUDY FILE {path}: a study cannot name other studies (key 'studies'); remove it.")
    cfg = deep_update({k: v for k, v in base.items() if k != "studies"}, overrides)
    cfg["studies"] = []
    cfg["family"] = ""  # a family of studies is the invocation's (studies.smk), not a study's
    cfg["study_file"] = str(Path(path).resolve())
    if "lockdir" not in overrides and cfg["study"]["name"] != base["study"]["name"]:
        raise StudyError(f"STUDY FILE {path}: study {cfg['study']['name']!r} names no lockdir, so it would "
                         "share the lock folder (pins, protocol, ledger) of the default study "
                         f"{base['study']['name']!r}. Fix: give it its own, e.g. lockdir: "
                         "../../lockfiles/studies/<name> (relative to the study file).")
    name = cfg["study"]["name"]
    for key in PER_STUDY_KEYS:
        cfg[key] = f"{base[key]}/{name}"
    try:
        return validate_config(cfg)
    except ConfigError as exc:
        raise StudyError(f"STUDY {name!r} ({path}): " + str(exc).replace("fix config/config.yaml or the "
                                                                         "--config value",
                                                                       "fix the "
                                                                       f"study file {path}")) from None


def shared_lockdirs(configs: dict) -> tuple | None:
    """(names, folder) of two studies with the same lock folder, else None."""
    seen: dict[str, str] = {}
    for name, cfg in configs.items():
        folder = str(Path(cfg["lockdir"]).resolve())
        if folder in seen:
            return [seen[folder], name], folder
        seen[folder] = name
    return None


def module_name(study_name: str) -> str:
    """A Python identifier for the study's Snakemake module (rule names are prefixed with it)."""
    return "study_" + re.sub(r"[^A-Za-z0-9]", "_", study_name)


def qrels_names(study: dict) -> tuple[str, str]:
    """The pinned names of the development and the sealed qrels files. A dataset with ONE qrels file names it
    twice (qrels_dev == qrels_confirm): its two parts, drawn once by repin=data, are the files the study
    uses."""
    if study["qrels_dev"] == study["qrels_confirm"]:
        return beir.part_name(study["qrels_dev"], beir.DEV_PART), beir.part_name(study["qrels_dev"],
                                                                                 beir.SEALED_PART)
    return study["qrels_dev"], study["qrels_confirm"]


# ---------------------------------------------------------------- parse-time input checks --
def check_data_pins(cfg: dict, lockdir) -> dict:
    """The study's dataset is pinned in its lockdir, with both qrels files it names."""
    st, path = cfg["study"], Path(lockdir) / layout.DATA_PINS
    if not path.is_file():
        where = ("" if Path(lockdir).is_absolute() else f" (lockdir {lockdir} is relative to the folder "
                 f"snakemake runs in, {Path.cwd()}: run from the repository, or give lockdir=/absolute/path)")
        fail_study(st["name"], path,
                   f"dataset {st['dataset']!r} has no pins in this study's lock folder{where}.",
                   f"pin it once, knowingly: snakemake --config {config_arg(cfg)}repin=data "
                   "data_zip=/path/to/<dataset>.zip (a BEIR public "
                   "dataset listed in lockfiles/datasets/beir.json is verified by its published md5 and size "
                   "first), then commit the lock folder; or correct study.dataset / lockdir.")
    pins = read_json(path)
    if pins.get("dataset") != st["dataset"]:
        fail_study(st["name"], path, f"study.dataset is {st['dataset']!r} but the pinned dataset is "
                   f"{pins.get('dataset')!r}.",
                   "name the pinned dataset in study.dataset, or point lockdir at the lock folder of the "
                   "dataset you mean.")
    url = (pins.get("zip") or {}).get("url")
    if url and cfg["data"]["url"] != url:
        fail_study(st["name"], path, f"data.url is {cfg['data']['url']!r} but the pinned archive is {url!r}.",
                   "set data.url to the pinned archive's URL (in the study file).")
    files = pins.get("files", {})
    for role, name in zip(("qrels_dev", "qrels_confirm"), qrels_names(st)):
        if name not in files:
            fail_study(st["name"], path, f"study.{role} = {st[role]!r}: {name} is not a pinned file (pinned: "
                       f"{sorted(files)}).",
                       f"name one of the pinned qrels files in study.{role} (a dataset with "
                       "one qrels file: name it in both, and pin its drawn parts with repin=data).")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if name not in files:
            fail_study(st["name"], path, f"the dataset pins have no {name}.", "re-pin the dataset "
                       "with repin=data.")
    if not files[qrels_names(st)[1]].get("sealed"):
        fail_study(st["name"], path,
                   f"{qrels_names(st)[1]} (study.qrels_confirm) is not marked \"sealed\": true.",
                   "the confirmation judgements must be the sealed file; correct study.qrels_confirm.")
    return pins


def check_candidate_source(cfg: dict, lockdir, repin: set) -> None:
    """The study's candidates exist where its source says (unless this invocation freezes them)."""
    st = cfg["study"]
    if "candidates" in repin:
        if st["candidates"] == "trec" and not cfg["trec_run"]:
            fail_study(st["name"], cfg["trec_run"] or "(trec_run not set)", "study.candidates is 'trec' and "
                       "repin=candidates needs the run to freeze.", "add --config trec_run=/path/to/your.run "
                       "(TREC format).")
        return
    # (the table itself is a committed input checked in common.smk, after the split lists: data -> splits ->
    # candidates)
    if not (Path(lockdir) / "splits" / "dev.txt").is_file():
        return  # common.smk names the missing split lists first
    wanted = ["candidates.tsv", TREC_RUN_FILE] if st["candidates"] == "trec" else []
    for name in wanted:
        path = Path(lockdir) / "candidates" / name
        if not path.is_file():
            fail_study(st["name"], path,
                       f"the study's {st['candidates']} candidates are not in its lock folder.",
                       f"freeze them once: snakemake --config {config_arg(cfg)}repin=candidates"
                       + (" trec_run=/path/to/your.run"
                                                                                 if st["candidates"] == "trec"
                          else "")
                       + ", then commit the lock folder.")
    derived = Path(lockdir) / layout.DERIVED_PINS
    pin = read_json(derived).get("candidates") if derived.is_file() else None
    if pin is None:
        return  # the run's own check names the missing pin (rule run_inputs)
    if pin.get("source", "frozen") != st["candidates"]:
        fail_study(st["name"], derived,
                   f"study.candidates is {st['candidates']!r} but the frozen candidates came "
                   f"from {pin.get('source', 'frozen')!r}.",
                   "correct study.candidates, or re-freeze: --config "
                   "repin=candidates.")
    if pin["params"]["depth"] < cfg["candidates"]["depth"]:
        fail_study(st["name"], Path(lockdir) / pin["file"],
                   f"the frozen candidates hold {pin['params']['depth']} "
                   f"per query, fewer than candidates.depth {cfg['candidates']['depth']}.",
                   f"freeze a deeper candidate list (--config {config_arg(cfg)}repin=candidates"
                   + (" trec_run=/path/to/your.run" if st["candidates"] == "trec" else "") + "), or lower "
                   "candidates.depth knowingly.")


def check_first_acquisition(cfg: dict, lockdir, catalogue_path) -> None:
    """repin=data pins a dataset ONCE, from the catalogue or a local ``data_dir`` folder: refused at start
    when pins exist, the dataset is not listed (no data_dir), or the folder misses a file or judges an unknown
    query."""
    from ..data.catalogue import check_local_folder

    st, path = cfg["study"], Path(lockdir) / layout.DATA_PINS
    if path.is_file():
        fail_study(st["name"], path, f"dataset {st['dataset']!r} is already pinned; repin=data writes "
                   "pins only once.",
                   "keep the pins (drop repin=data), or delete the file knowingly, in its own commit, "
                   "to re-pin.")
    if cfg["data_dir"]:
        split = {"seed": cfg["splits"]["seed"], "confirm_size": cfg["splits"]["confirm_size"]}
        dev, confirm = (Path(st[k]).stem for k in ("qrels_dev", "qrels_confirm"))
        try:
            check_local_folder(cfg["data_dir"], path, dev, confirm, split if dev == confirm else None)
        except PipelineError as exc:
            raise StudyError(f"STUDY {st['name']!r}: repin=data data_dir={cfg['data_dir']}: {exc}") from None
        return
    known = read_json(catalogue_path).get("datasets", {})
    if st["dataset"] not in known:
        fail_study(st["name"], catalogue_path, f"dataset {st['dataset']!r} is not in the catalogue (known: "
                   f"{', '.join(sorted(known))}).",
                   "name a catalogue dataset in study.dataset, add an entry with the "
                   "archive's URL, size and md5 as its publisher gives them, or pin a local BEIR-layout "
                   "folder of "
                   "it (repin=data data_dir=FOLDER).")


def check_mirror(cfg: dict, pins: dict) -> None:
    """A data_mirror must hold THIS study's dataset (a command-line data_mirror applies to every study that
    does not set its own): compared by the pinned sizes, before any job."""
    mirror, st = cfg["data_mirror"], cfg["study"]
    if not mirror:
        return
    corpus = Path(mirror) / "corpus.jsonl"
    want = pins["files"]["corpus.jsonl"].get("bytes")
    if corpus.is_file() and want is not None and corpus.stat().st_size != want:
        fail_study(st["name"], corpus, f"data_mirror {mirror} holds another dataset than {st['dataset']!r} "
                   f"(corpus.jsonl is {corpus.stat().st_size} bytes, the pinned one {want}).",
                   "set this study's "
                   "own data_mirror in its study file (a command-line data_mirror applies to every study "
                   "that "
                   "does not set one).")


def check_study(cfg: dict, lockdir, repin: set, catalogue_path=None, default_model_pins=None) -> None:
    """Every parse-time check of a study's inputs (before any job runs)."""
    if "data" in repin and catalogue_path is not None:
        check_first_acquisition(cfg, lockdir, catalogue_path)
    if "data" not in repin:
        check_mirror(cfg, check_data_pins(cfg, lockdir))
    from .reranker_checks import check_reranker

    check_reranker(cfg, lockdir, repin, default_model_pins)
    if not repin or "candidates" in repin:  # (splits are re-pinned before any candidates exist)
        check_candidate_source(cfg, lockdir, repin)


def invocation_studies(config: dict, command_line: dict, root) -> dict[str, dict]:
    """The validated config of every study of this invocation, by name (``config``: config.yaml + the command
    line, validated here; ``command_line``: what --config set). One study replaces the default's config."""
    config["studies"] = parse_study_list(config.get("studies", []))
    validate_config(config)
    if command_line.get("study_file"):  # each study's module has it set; a user never does
        raise ConfigError("config key 'study_file' is set by studies=[...], not by hand: name the study with "
                          f"--config studies=[{config['study_file']}] instead.")
    out: dict[str, dict] = {}
    for name in config["studies"]:
        cfg = study_config(config, study_file(name, root))
        if cfg["study"]["name"] in out:
            raise ConfigError(f"study {cfg['study']['name']!r} is named twice in "
                              f"studies={config['studies']}: each study file needs its own study.name")
        out[cfg["study"]["name"]] = cfg
    shared = shared_lockdirs(out)
    if shared:
        raise ConfigError(f"studies {shared[0]} share one lock folder ({shared[1]}): pins, protocol and "
                          "ledger are per study. Fix: give each study file its own lockdir.")
    return out


def modules_file(names, folder) -> Path:
    """A Snakefile fragment that declares one module of this workflow per study, with Snakemake's own
    ``module`` and ``use rule`` statements (they need literal names, so the fragment is written for this
    invocation's studies; ``STUDY_CONFIGS`` is the Snakefile's table of their configs). Written once per set
    of names (atomically)."""
    from ..core.fileio import atomic_write_text, sha256_text

    text = ("# generated for this invocation's studies (rerank_study.settings.studies.modules_file): "
            "do not edit\n")
    for name in names:
        mod = module_name(name)
        text += (f"\nmodule {mod}:\n    snakefile: workflow.main_snakefile\n    config: "
                 f"STUDY_CONFIGS[{name!r}]\n\nuse rule * from {mod} as {mod}_*\n")
    path = Path(folder) / f"studies-{sha256_text(text)[:16]}.smk"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
    return path
