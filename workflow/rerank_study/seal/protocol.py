"""The frozen protocol: every value that decides the confirmation result, and its comparison with now.

``frozen_fields`` derives them from the config, the lock folder and the code NOW; freezing stores them in
``<lockdir>/protocol.json`` (canonical JSON, its sha256 in ``protocol.sha256``); an opening recomputes them
and requires equality, naming every setting or method file that differs.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core import layout
from ..core.errors import SealError
from ..core.fileio import (
    VerifiedFile,
    atomic_write_text,
    canonical_json,
    input_bytes,
    input_text,
    read_json,
    sha256_bytes,
    sha256_file,
    sha256_text,
)
from ..core.names import RUN_FILE, STAND_IN
from ..rankings.ranking import TIE_RULE_TEXT
from ..reranker import reranker_run, scoring
from ..settings.config import calibration_settings, result_settings
from . import locations as loc
from . import method as meth
from .prereg import preregistration_note


def _run_file_block(cfg: dict, lockdir: Path) -> dict:
    """A run-file reranker: its pinned development run and the confirmation run submitted at freeze (its
    sha256 from the lock folder's copy NOW: an opening whose copy differs stops)."""
    dev = read_json(lockdir / layout.DERIVED_PINS)[reranker_run.PIN_NAME]
    confirm = lockdir / layout.RERANKER_CONFIRM_RUN
    return {"reranker": cfg["study"]["reranker"], "scorer": cfg["scorer"],
            "development_run": {"file": dev["file"], "sha256": dev["sha256"]},
            "confirmation_run": {"file": layout.RERANKER_CONFIRM_RUN,
                                 "sha256": sha256_file(confirm) if confirm.is_file() else None}}


def _model_block(cfg: dict, lockdir: Path) -> dict:
    if cfg["study"]["reranker_kind"] == RUN_FILE:
        return _run_file_block(cfg, lockdir)
    ce = read_json(lockdir / layout.MODEL_PINS)["cross_encoder"]
    model = {"repo": ce["repo"], "revision": ce["revision"],
             "files_sha256": {n: p["sha256"] for n, p in sorted(ce["files"].items())
                              if not n.startswith("_")},
             "scorer": cfg["scorer"]}
    if cfg["scorer"] == STAND_IN:  # a TEST-ONLY protocol says so instead of claiming the pinned model
        model["standin"] = {k: cfg["standin"][k] for k in ("head_seed", "head_std")}
    return model


def _pins_blocks(lockdir: Path) -> dict:
    data = read_json(lockdir / loc.DATA_PINS)["files"]
    derived = read_json(lockdir / loc.DERIVED_PINS)
    cand = derived["candidates"]
    return {"data": {n: {k: p[k] for k in ("sha256", "content_sha256", "role") if k in p}
                     for n, p in sorted(data.items())},
            "splits": {k: derived["splits"][k] for k in ("dev", "confirm", "seed", "dev_size",
                                                         "confirm_size")},
            "candidates": {"sha256": cand["sha256"], "params": cand["params"], "file": cand["file"],
                           "file_sha256": sha256_file(lockdir / cand["file"])}}


def _scoring_block(cfg: dict) -> dict:
    """How the reranker's scores are made: a cross-encoder's scoring contract, or a run file's reading
    rule."""
    if cfg["study"]["reranker_kind"] == RUN_FILE:
        return {"reranker": f"a pinned TREC run file, read in the order {reranker_run.TIE_RULE}",
                "inference": "none: the confirmation queries' run was submitted when this protocol was "
                             "frozen; an opening reads exactly that file"}
    return scoring.contract(cfg["ce"]) | {  # settings, batching, numeric mode (threads/shards: speed only)
        "inference": "fresh at every opening (the score cache is never read; existing entries must be equal)"}


def _verification_block(cfg: dict) -> dict:
    """A cross-encoder's re-inference sample after the scoring (rule verify_scores); a run file infers
    nothing."""
    if cfg["study"]["reranker_kind"] == RUN_FILE:
        return {}
    v = cfg["verify"]
    return {"verification": {"batches": v["batches"], "seed": v["seed"], "every_batch": v["every_batch"],
                             "rule": "after the scoring, the batches with the smallest sha256('<seed>\\t<qid>"
                                     "\\t<batch>') (every batch with every_batch) re-inferred from scratch, "
                                     "bit equality with pairs.tsv"}}


def _analysis_blocks(cfg: dict) -> dict:
    return {
        "text_template": 'query text as given; document (title + " " + text).strip()',
        "scoring": _scoring_block(cfg),
        **_verification_block(cfg),
        "blend": {"k": cfg["blend"]["k"], "formula": "s = 1/(k + r0) + 1/(k + r1), float64, in that order"},
        "tie_rule": TIE_RULE_TEXT,
        "grouping_rule": "queries linked by >= 1 shared judged relevant document (qrels only, documents "
                         "outside the candidates count); groups = connected components; written before "
                         "scores are merged",
        "metrics": cfg["metrics"],
        "bootstrap": {"B": cfg["bootstrap"]["B"], "seed": cfg["bootstrap"]["confirm_seed"],
                      "percentiles": cfg["bootstrap"]["percentiles"], "interpolation": "linear",
                      "estimator": "sum over drawn groups of summed delta / sum of drawn group sizes; "
                                   "query-level bootstrap as sensitivity; one index matrix shared by "
                                   "the comparisons"},
        "threshold": cfg["threshold"], "comparisons": cfg["comparisons"], "evalstats": cfg["evalstats"],
        # reported beside the interval, computed on the confirmation data; it decides nothing
        "calibration": calibration_settings(cfg, confirmation=True),
        "decision_rule": ("Report the mean primary delta, whether it reaches the threshold, and whether each "
                          "interval covers 0 and the threshold, whatever the outcome. If the mean is below "
                          "the threshold the practical hypothesis is not supported. Never re-tune and "
                          "re-test on the confirmation set."),
    }


def frozen_fields(cfg: dict, lockdir, root) -> dict:
    """Every value that decides the confirmation result, derived from the config, the lockfiles and the code
    NOW."""
    lockdir = Path(lockdir)
    method_sha, method_files = meth.method_sha256(root)
    return {
        "question": (f"Does the blend reach a mean {cfg['comparisons']['primary']} gain in "
                     f"ndcg@{cfg['metrics']['ndcg_k']} of at least {cfg['threshold']} on the "
                     f"{cfg['splits']['confirm_size']} sealed confirmation queries?"),
        "study": dict(cfg["study"]),  # dataset, reranker (+ label index), candidate source, qrels roles
        "model": _model_block(cfg, lockdir),
        **_pins_blocks(lockdir),
        "method": {"sha256": method_sha, "files": method_files, "covers": meth.COVERS},
        # every config key that can change a result (config/README.md names the ones that cannot)
        "settings": result_settings(cfg),
        **_analysis_blocks(cfg),
    }


def diff_keys(a, b, prefix: str = "") -> list[str]:
    """Dotted keys where two nested values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff_keys(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)
        return out
    return [] if a == b else [prefix]


def setting_changes(protocol: dict, current: dict) -> list[str]:
    return diff_keys({k: protocol.get(k) for k in current if k != "method"},
                     {k: v for k, v in current.items() if k != "method"})


def build_protocol(cfg: dict, lockdir, root, evidence: dict, power: dict, test_only: bool, now: str) -> dict:
    return {"protocol_version": 3, "frozen_at": now, "test_only": bool(test_only),
            **frozen_fields(cfg, lockdir, root), "power": power, "development_evidence": evidence}


def write_protocol(lockdir, protocol: dict) -> str:
    """protocol.json (canonical), protocol.sha256 and PREREGISTRATION.md; return the sha256."""
    lockdir = Path(lockdir)
    text = canonical_json(protocol)
    sha = sha256_text(text)
    atomic_write_text(lockdir / loc.PROTOCOL, text)
    atomic_write_text(lockdir / loc.PROTOCOL_SHA, f"{sha}  {loc.PROTOCOL}\n")
    # the note of the protocol AS WRITTEN (canonical: sorted keys), so that it can be regenerated from the
    # file
    atomic_write_text(lockdir / loc.PREREG, preregistration_note(json.loads(text), sha))
    return sha


def unseal_command(cfg: dict, lockdir) -> str:
    """The opening command of this invocation's study (the default study: no studies=)."""
    study = f"studies=[{cfg['study_file']}] " if cfg.get("study_file") else ""
    return (f"snakemake confirm --cores 4 --config {study}unseal=$(cut -d' ' -f1 "
            f"{Path(lockdir) / loc.PROTOCOL_SHA})")


def verified_protocol(lockdir, token: str | None = None, cfg: dict | None = None) -> tuple[str, dict]:
    """(sha256, protocol) after checking protocol.json against protocol.sha256 (and the token); the file is
    read once: the protocol returned is parsed from the bytes whose sha256 was checked."""
    lockdir = Path(lockdir)
    how = f"Unseal with: {unseal_command(cfg or {}, lockdir)}"
    if not (lockdir / loc.PROTOCOL).exists():
        raise SealError(f"THE CONFIRMATION IS SEALED: no frozen protocol at {lockdir / loc.PROTOCOL}. Freeze "
                        "one first: python scripts/confirm.py freeze --dev-run results/dev (another study: "
                        "add --study <its name or file> and use its run, results/<study>/dev)")
    data = input_bytes(lockdir / loc.PROTOCOL)
    actual = sha256_bytes(data)
    recorded = input_text(lockdir / loc.PROTOCOL_SHA).split()[0] if (lockdir / loc.PROTOCOL_SHA).exists() \
        else None
    if recorded != actual:
        raise SealError(f"REFUSED: {lockdir / loc.PROTOCOL} changed since it was frozen (sha256 now "
                        f"{actual}, recorded {recorded}). Restore the frozen protocol from git.")
    if token is not None and token != actual:
        raise SealError(f"REFUSED: the unseal token {token!r} is not the frozen protocol's sha256 "
                        f"{actual}. {how}")
    return actual, read_json(VerifiedFile(lockdir / loc.PROTOCOL, data))


def check_frozen_run_file(cfg: dict, lockdir, protocol: dict) -> None:
    """A run-file reranker's opening evaluates exactly the confirmation run frozen in the protocol: the lock
    folder's copy, and a run_file the invocation names, must have its sha256."""
    if (protocol.get("study") or {}).get("reranker_kind") != RUN_FILE:
        return
    pin = protocol["model"]["confirmation_run"]
    copy = Path(lockdir) / pin["file"]
    given = [(Path(cfg["run_file"]), f"run_file={cfg['run_file']}",
              "drop run_file: the opening reads the lock "
              f"folder's frozen copy {copy}")] if cfg.get("run_file") else []
    for path, what, fix in [(copy, "the lock folder's confirmation run",
                             f"restore {copy} from git (git checkout -- "
                             f"{copy})"), *given]:
        found = sha256_file(path) if path.is_file() else "missing"
        if found != pin["sha256"]:
            raise SealError(f"REFUSED: {what} is not the run frozen in the protocol (blind-submitted when it "
                            "was frozen; an opening evaluates exactly that file). Nothing was opened.\n  "
                            f"file: {path}\n  expected sha256: {pin['sha256']} "
                            f"({Path(lockdir) / loc.PROTOCOL}, model.confirmation_run)\n  found: {found}\n  "
                            f"fix: {fix}; another run is a new preregistration, frozen before any opening.")


def refreeze_command(cfg: dict) -> str:
    """The re-freeze command of this invocation's study (the default study: no --study)."""
    if not cfg.get("study_file"):
        return "python scripts/confirm.py refreeze --reason \"...\" --dev-run results/dev"
    return (f"python scripts/confirm.py refreeze --study {cfg['study_file']} --reason \"...\" --dev-run "
            f"results/{cfg['study']['name']}/dev")


def settings_sources(cfg: dict) -> str:
    """The files a setting comes from: config/config.yaml, the study file, and the command line."""
    return ", ".join(["config/config.yaml", *([cfg["study_file"]] if cfg.get("study_file") else []),
                      "--configfile / --config"])


def value_at(tree: dict, dotted: str):
    for key in dotted.split("."):
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree


def freezing_commit(lockdir, root) -> str:
    """The commit that added the protocol (its hash, or a description when there is none)."""
    from . import tree

    rel = f"{loc.relative(lockdir, root)}/{loc.PROTOCOL}"
    found = tree.git(root, "log", "-1", "--format=%H", "--diff-filter=A", "--", rel).stdout.strip() \
        if tree.is_repo(root) else ""
    return found or "<the commit that froze the protocol>"


def check_frozen(cfg: dict, lockdir, root, protocol: dict) -> str:
    """Settings, pins and method equal the frozen ones; return the current method sha256."""
    check_frozen_run_file(cfg, lockdir, protocol)
    current = frozen_fields(cfg, lockdir, root)
    changed = setting_changes(protocol, current)
    if changed:
        values = "".join(f"\n  {k}: frozen {value_at(protocol, k)!r}, now {value_at(current, k)!r}"
                         for k in changed[:12])
        raise SealError("REFUSED: pins or settings changed since the protocol was frozen:" + values
                        + f"\nWhere: {settings_sources(cfg)} (settings.*), {Path(lockdir)} (pins). Fix: set "
                        "the frozen values again (an uncommitted edit: git restore <file>; a committed one: "
                        f"git revert <its commit>; frozen: {Path(lockdir) / loc.PROTOCOL}); never re-tune on "
                        "the confirmation set. Keys that cannot change a result are listed in "
                        "config/README.md.")
    files = meth.method_changes((protocol.get("method") or {}).get("files", {}), current["method"]["files"])
    if files:
        commit = freezing_commit(lockdir, root)
        added = [f.split(" (")[0] for f in files if f.endswith("(added)")]
        other = [f.split(" (")[0] for f in files if not f.endswith("(added)")]
        fixes = ([f"git checkout {commit} -- {' '.join(other[:20])}"] if other else []) + \
            ([f"git rm {' '.join(added[:20])} (or move them out of the method folders)"] if added else [])
        raise SealError("REFUSED: the method changed since the protocol was frozen: " + ", ".join(files[:20])
                        + (f" and {len(files) - 20} more" if len(files) > 20 else "") + ". Restore the "
                        f"frozen code: {'; '.join(fixes)}; then commit. A refactor that leaves results "
                        "identical must be re-frozen, explicitly and before any opening: "
                        f"{refreeze_command(cfg)}.")
    return current["method"]["sha256"]
