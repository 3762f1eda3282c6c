"""The sealed confirmation: a frozen protocol (settings, pins AND method), guarded unsealing, and an
append-only ledger that records every look.

* ``freeze``: from a FINISHED development run (its manifest and a passing audit, never summary.json
  alone: the full development split, the pinned model by its weights' hash, the code that is being
  frozen) every value that decides the confirmation result - settings, data/split/candidate/model
  pins, the candidate table file's sha256 and a per-file sha256 of the method (library, rule
  scripts, rules, Snakefile, schema, requirements lock) - is written to ``<lockdir>/protocol.json``
  (canonical JSON), its sha256 to ``protocol.sha256``, a note with the minimum detectable effect to
  ``PREREGISTRATION.md`` and a ``frozen`` line to the ledger. Freezing reads no confirmation data.
* ``refreeze``: a code change that leaves every development artefact byte-identical (shown by a
  development run under the new code) may be recorded as a new protocol with a ``re-frozen`` ledger
  line - only before any opening started.
* ``check_unseal``: the only gate to the sealed confirmation judgements, run before any job. It
  refuses when the token is missing or wrong; the lock folder is not the repository's tracked
  ``lockfiles/`` (or a test fixture, see below); a ``repin`` is asked for; the protocol file, a
  pin, a setting or a method file changed since freezing; the scorer is the STAND-IN; the working
  tree has uncommitted changes; the protocol or ledger is not tracked by git or the ledger's git
  history is not append-only; results/confirm-* folders exist that the ledger does not know; or an
  opening under a different protocol exists.
* the ledger ``<lockdir>/confirmation_ledger.jsonl``: one JSON line per event, appended, flushed and
  fsynced, never rewritten. ``started`` is written by the rule that copies the sealed judgements,
  BEFORE it copies them (so every look is recorded, also an interrupted one or one that targets an
  intermediate file); ``completed`` is written after the audit passed. Opening numbers count STARTED
  openings, so an interrupted opening is never numbered twice.
* TEST SUITE ONLY: ``allow_standin_for_testing`` / ``allow_dirty_for_testing`` are refused unless
  the lock folder is a test fixture (it holds a ``TEST_FIXTURE`` file; the repository's
  ``lockfiles/`` never counts as one) whose sealed judgements are not the real ones. Everything
  opened with a fixture lock folder is labelled TEST-ONLY in the ledger and report; labelled
  openings are numbered and compared only among themselves and never count as (or against) a real
  opening.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import math
import os
import subprocess
from pathlib import Path

from . import scoring
from .errors import SealError
from .fileio import atomic_write_text, canonical_json, read_json, sha256_file, sha256_text
from .fingerprint import METHOD_PARTS, method_sha256
from .names import PINNED, STAND_IN, STANDIN_LABEL

PROTOCOL = "protocol.json"
PROTOCOL_SHA = "protocol.sha256"
PREREG = "PREREGISTRATION.md"
LEDGER = "confirmation_ledger.jsonl"
TEST_FIXTURE = "TEST_FIXTURE"  # marker file of a test-suite lock folder (never in the repository's lockfiles/)
REPO_LOCKDIR = "lockfiles"
STUDY_LOCKDIRS = "lockfiles/studies"  # a non-default study's own tracked lock folder: lockfiles/studies/<study>/
GUARDED_PATHS = ("Snakefile", "workflow", "scripts", "config", "lockfiles", "pyproject.toml")
TEST_SWITCHES = ("allow_standin_for_testing", "allow_dirty_for_testing")

# ledger events
FROZEN, REFROZEN, STARTED, COMPLETED = "frozen", "re-frozen", "started", "completed"
OPENING_EVENTS = (STARTED, COMPLETED)
EVENTS = (FROZEN, REFROZEN, STARTED, COMPLETED)
# labels
FIXTURE_LABEL = "TEST-ONLY FIXTURE LOCKFILES"
PROTOCOL_LABEL = "TEST-ONLY PROTOCOL"
STANDIN_RUN_LABEL = "TEST-ONLY STAND-IN"
DIRTY_LABEL = "TEST-ONLY UNCOMMITTED CODE"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# ---------------------------------------------------------------------- where the seal lives --
def repository_lockdir(root) -> Path:
    return Path(root) / REPO_LOCKDIR


def repository_lockdirs(root) -> list[Path]:
    """The repository's own lock folders: lockfiles/ (the default study) and lockfiles/studies/<study>/."""
    studies = Path(root) / STUDY_LOCKDIRS
    return [repository_lockdir(root)] + (sorted(p for p in studies.iterdir() if p.is_dir()) if studies.is_dir() else [])


def is_repository_lockdir(lockdir, root) -> bool:
    lockdir = Path(lockdir).resolve()
    return lockdir == repository_lockdir(root).resolve() or lockdir.parent == (Path(root) / STUDY_LOCKDIRS).resolve()


def is_test_fixture(lockdir, root) -> bool:
    """A test-suite lock folder: it holds TEST_FIXTURE and is not one of the repository's own lock folders."""
    lockdir = Path(lockdir)
    return (lockdir / TEST_FIXTURE).is_file() and not is_repository_lockdir(lockdir, root)


def pinned_with_role(lockdir, role: str) -> str:
    """The name of the data file a lock folder pins with ``role`` (qrels_dev, qrels_confirm): exactly one."""
    path = Path(lockdir) / "data_pins.json"
    names = [n for n, p in read_json(path)["files"].items() if p.get("role") == role]
    if len(names) != 1:
        raise SealError(f"{path} must pin exactly one file with role {role!r}; it pins {names}. Restore it from git.")
    return names[0]


def sealed_name(lockdir) -> str:
    """The sealed confirmation judgements' file name (role qrels_confirm, marked "sealed")."""
    name = pinned_with_role(lockdir, "qrels_confirm")
    if not read_json(Path(lockdir) / "data_pins.json")["files"][name].get("sealed"):
        raise SealError(f"{Path(lockdir) / 'data_pins.json'}: {name} (role qrels_confirm) is not marked sealed.")
    return name


def _sealed_pin(lockdir) -> dict:
    return read_json(Path(lockdir) / "data_pins.json")["files"][sealed_name(lockdir)]


def check_lock_location(cfg: dict, lockdir, root) -> bool:
    """Refuse test switches outside a test fixture, any lock folder other than the repository's
    own, and a fixture that pins the real sealed judgements. Return whether it is a test fixture."""
    lockdir, root = Path(lockdir), Path(root)
    fixture = is_test_fixture(lockdir, root)
    switches = [k for k in TEST_SWITCHES if cfg.get(k)]
    if switches and not fixture:
        raise SealError(f"REFUSED: {', '.join(switches)} is for the TEST SUITE's fixture lock folder only (a folder "
                        f"holding a {TEST_FIXTURE} file, never the repository's {REPO_LOCKDIR}/); {lockdir} is not one. "
                        "A test switch must never let a look at the real sealed judgements through: drop it.")
    if not fixture and not is_repository_lockdir(lockdir, root):
        raise SealError(f"REFUSED: the confirmation is opened only with one of the repository's own tracked lock "
                        f"folders ({repository_lockdir(root)}, or {Path(root) / STUDY_LOCKDIRS}/<study> for another "
                        f"study); lockdir={lockdir} is another folder (a protocol and ledger there would leave no "
                        "trace in the repository). Drop the lockdir override.")
    if fixture:
        mine = _sealed_pin(lockdir)
        for repo_lock in repository_lockdirs(root):
            if not (repo_lock / "data_pins.json").exists():
                continue
            real = _sealed_pin(repo_lock)
            same = [k for k in ("sha256", "content_sha256") if mine.get(k) and mine.get(k) == real.get(k)]
            if same:
                raise SealError(f"REFUSED: the test-fixture lock folder {lockdir} pins the REAL sealed judgements "
                                f"({sealed_name(lockdir)} {same[0]} {mine[same[0]]}, as {repo_lock / 'data_pins.json'}). "
                                "A test opening must use the fixture's own sealed file.")
    return fixture


# ------------------------------------------------------------------ what the protocol freezes --
def frozen_fields(cfg: dict, lockdir, root) -> dict:
    """Every value that decides the confirmation result, derived from the config, the lockfiles and
    the code NOW. Freezing stores it; unsealing recomputes it and requires equality."""
    lockdir = Path(lockdir)
    data = read_json(lockdir / "data_pins.json")["files"]
    models = read_json(lockdir / "model_pins.json")
    derived = read_json(lockdir / "derived_pins.json")
    ce = models["cross_encoder"]
    method_sha, method_files = method_sha256(root)
    model = {"repo": ce["repo"], "revision": ce["revision"],
             "files_sha256": {n: p["sha256"] for n, p in sorted(ce["files"].items()) if not n.startswith("_")},
             "scorer": cfg["scorer"]}
    if cfg["scorer"] == STAND_IN:  # a TEST-ONLY protocol says so instead of claiming the pinned model
        model["standin"] = {k: cfg["standin"][k] for k in ("head_seed", "head_std")}
    cand = derived["candidates"]
    return {
        "question": (f"Does the blend reach a mean {cfg['comparisons']['primary']} gain in "
                     f"ndcg@{cfg['metrics']['ndcg_k']} of at least {cfg['threshold']} on the "
                     f"{cfg['splits']['confirm_size']} sealed confirmation queries?"),
        "study": dict(cfg["study"]),  # dataset, reranker (+ label index), candidate source, qrels roles
        "model": model,
        "data": {n: {k: p[k] for k in ("sha256", "content_sha256", "role") if k in p} for n, p in sorted(data.items())},
        "splits": {k: derived["splits"][k] for k in ("dev", "confirm", "seed", "dev_size", "confirm_size")},
        "candidates": {"sha256": cand["sha256"], "params": cand["params"], "file": cand["file"],
                       "file_sha256": sha256_file(lockdir / cand["file"])},
        "method": {"sha256": method_sha, "files": method_files, "covers": list(METHOD_PARTS)},
        "text_template": 'query text as given; document (title + " " + text).strip()',
        "scoring": scoring.contract(cfg["ce"])  # settings, batching, numeric mode (threads/shards: speed only)
        | {"inference": "fresh at every opening (the score cache is never read; existing entries must be equal)"},
        "blend": {"k": cfg["blend"]["k"], "formula": "s = 1/(k + r0) + 1/(k + r1), float64, in that order"},
        "tie_rule": "score descending, then document id as a string descending",
        "grouping_rule": "queries linked by >= 1 shared judged relevant document (qrels only, documents outside the "
                         "candidates count); groups = connected components; written before scores are merged",
        "metrics": cfg["metrics"],
        "bootstrap": {"B": cfg["bootstrap"]["B"], "seed": cfg["bootstrap"]["confirm_seed"],
                      "percentiles": cfg["bootstrap"]["percentiles"], "interpolation": "linear",
                      "estimator": "sum over drawn groups of summed delta / sum of drawn group sizes; query-level "
                                   "bootstrap as sensitivity; one index matrix shared by the comparisons"},
        "threshold": cfg["threshold"],
        "comparisons": cfg["comparisons"],
        "evalstats": cfg["evalstats"],
        "decision_rule": ("Report the mean primary delta, whether it reaches the threshold, and whether each "
                          "interval covers 0 and the threshold, whatever the outcome. If the mean is below the "
                          "threshold the practical hypothesis is not supported. Never re-tune and re-test on the "
                          "confirmation set."),
    }


def _diff_keys(a, b, prefix=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff_keys(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)
        return out
    return [] if a == b else [prefix]


def method_changes(frozen_files: dict, current_files: dict) -> list[str]:
    """'path (changed|added|removed)' for every method file that differs from the frozen one."""
    out = []
    for path in sorted(set(frozen_files) | set(current_files)):
        if path not in current_files:
            out.append(f"{path} (removed)")
        elif path not in frozen_files:
            out.append(f"{path} (added)")
        elif frozen_files[path] != current_files[path]:
            out.append(f"{path} (changed)")
    return out


def _setting_changes(protocol: dict, current: dict) -> list[str]:
    return _diff_keys({k: protocol.get(k) for k in current if k != "method"},
                      {k: v for k, v in current.items() if k != "method"})


# ------------------------------------------------------- the development evidence (freezing) --
def _pinned_weights(lockdir) -> str:
    ce = read_json(Path(lockdir) / "model_pins.json")["cross_encoder"]
    return ce["files"][ce["weights"]]["sha256"]


def _evidence_problems(run_dir: Path, manifest: dict, audit: dict, cfg: dict, lockdir: Path, root,
                       allow_standin: bool) -> list[str]:
    from .config import run_settings

    mpath, apath = run_dir / "manifest.json", run_dir / "audit.json"
    problems = []
    m_sha = sha256_file(mpath)
    if audit.get("ok") is not True:
        problems.append(f"{apath}: the audit did not pass (failed checks {audit.get('failed_checks')}); fix the run "
                        "and audit it again")
    audited = (audit.get("info") or {}).get("manifest_sha256")
    if audited != m_sha:
        problems.append(f"{apath} audited a manifest with sha256 {audited}, but {mpath} has sha256 {m_sha} (changed "
                        f"after its audit?): run python scripts/audit.py {run_dir}")
    if manifest.get("kind") != "development":
        problems.append(f"{mpath}: kind {manifest.get('kind')!r}, expected 'development'")
    settings = manifest.get("settings") or {}
    if settings.get("n_queries") is not None:
        problems.append(f"{mpath}: a smoke/partial run ({settings.get('n_queries')} development queries x "
                        f"{settings.get('depth')} candidates); the MDE must come from the FULL development split: run "
                        "the development analysis without smoke=true")
    else:
        changed = _diff_keys(settings, run_settings(cfg, confirmation=False))
        if changed:
            problems.append(f"{mpath}: its analysis settings differ from the config being frozen: {', '.join(changed)}; "
                            "rerun the development analysis with this config")
    scorer = manifest.get("scorer")
    pinned = _pinned_weights(lockdir)
    if scorer == PINNED:
        if manifest.get("model_weights_sha256") != pinned:
            problems.append(f"{mpath}: model weights sha256 {manifest.get('model_weights_sha256')}, expected the pinned "
                            f"{pinned} ({lockdir / 'model_pins.json'})")
    elif scorer == STANDIN_LABEL:
        if not allow_standin:
            problems.append(f"{mpath}: the run comes from the STAND-IN scorer: its variance says nothing about the pinned "
                            "cross-encoder, so it cannot size the confirmation. Run the development analysis with the "
                            "pinned model first.")
    else:
        problems.append(f"{mpath}: unknown scorer {scorer!r}")
    method = method_sha256(root)[0]
    if manifest.get("method_sha256") != method:
        problems.append(f"{mpath}: made with other code (method sha256 {manifest.get('method_sha256')}; this checkout: "
                        f"{method}); rerun the development analysis with the code being frozen")
    art = {a["key"]: a for a in manifest.get("artefacts", [])}
    for key in ("summary", "per_query", "groups"):
        if key not in art:
            problems.append(f"{mpath}: lists no artefact {key!r}")
            continue
        path = run_dir / art[key]["path"]
        actual = sha256_file(path) if path.exists() else "missing"
        if actual != art[key]["sha256"]:
            problems.append(f"{path}: sha256 {actual}, but the audited manifest says {art[key]['sha256']} (edited after "
                            "the run?)")
    data = read_json(lockdir / "data_pins.json")["files"]
    derived = read_json(lockdir / "derived_pins.json")
    pins = {"corpus": data["corpus.jsonl"]["sha256"], "queries": data["queries.jsonl"]["sha256"],
            "qrels_dev": data[pinned_with_role(lockdir, "qrels_dev")]["sha256"], "split_dev": derived["splits"]["dev"]["sha256"],
            "split_confirm": derived["splits"]["confirm"]["sha256"], "candidates": derived["candidates"]["sha256"]}
    for key, pin in pins.items():
        found = art.get(key, {}).get("sha256")
        if found != pin:
            problems.append(f"{mpath}: {key} sha256 {found}, but {lockdir} pins {pin}")
    return problems


def _recompute_power(run_dir: Path, manifest: dict, summary: dict, cfg: dict) -> dict:
    """The power block from per_query.tsv and groups.tsv (verified against the manifest): it must
    equal summary.json's, which the audit does not recompute."""
    from . import evalstats as es
    from .fileio import read_tsv
    from .names import column, primary_measure

    art = {a["key"]: run_dir / a["path"] for a in manifest["artefacts"]}
    rows = read_tsv(art["per_query"])
    a, b = cfg["comparisons"]["all"][cfg["comparisons"]["primary"]]
    metric = primary_measure(cfg["metrics"])
    deltas = [float(r[column(a, metric)]) - float(r[column(b, metric)]) for r in rows]
    pos = {r["qid"]: i for i, r in enumerate(rows)}
    groups: dict[int, list[int]] = {}
    for g in read_tsv(art["groups"]):
        groups.setdefault(int(g["group_index"]), []).append(pos[g["qid"]])
    pw_cfg = cfg["evalstats"]["power"]
    n = len(deltas)
    var = es.grouped_variance_of_mean(deltas, [groups[i] for i in sorted(groups)])
    sd_eff = math.sqrt(n * var)
    recomputed = {"alpha": pw_cfg["alpha"], "power": pw_cfg["power"], "n_development": n,
                  "n_confirmation": pw_cfg["confirm_n"], "grouped_variance_of_mean": var, "sd_eff": sd_eff,
                  "mde_confirmation": es.minimum_detectable_effect(sd_eff, pw_cfg["confirm_n"], pw_cfg["alpha"],
                                                                   pw_cfg["power"])}
    stored = (summary.get("evalstats") or {}).get("power") or {}
    differ = [k for k, v in recomputed.items() if stored.get(k) != v]
    if differ:
        raise SealError(f"REFUSED: {art['summary']}: its power block differs from the one recomputed from per_query.tsv "
                        f"and groups.tsv in {', '.join(differ)} (recomputed {[recomputed[k] for k in differ]}, stored "
                        f"{[stored.get(k) for k in differ]}). Rerun the development analysis.")
    return recomputed | {"formula": stored.get("formula")}


def development_evidence(run_dir, cfg: dict, lockdir, root, allow_standin: bool = False) -> tuple[dict, dict]:
    """(evidence, power) of a finished development run, or SealError listing every problem."""
    run_dir, lockdir = Path(run_dir), Path(lockdir)
    for name in ("manifest.json", "audit.json"):
        if not (run_dir / name).exists():
            raise SealError(f"REFUSED: {run_dir / name} does not exist. Freeze from a FINISHED development run (its "
                            "manifest and its passing audit.json), e.g. results/dev after snakemake --cores 4.")
    manifest, audit = read_json(run_dir / "manifest.json"), read_json(run_dir / "audit.json")
    problems = _evidence_problems(run_dir, manifest, audit, cfg, lockdir, root, allow_standin)
    if problems:
        raise SealError(f"REFUSED: cannot freeze from {run_dir}:\n  - " + "\n  - ".join(problems))
    summary = read_json(run_dir / "summary.json")
    power = _recompute_power(run_dir, manifest, summary, cfg)
    prim = summary["comparisons"][summary["primary"]]
    evidence = {"run": run_dir.name, "scorer": manifest["scorer"], "model_weights_sha256": manifest["model_weights_sha256"],
                "manifest_sha256": sha256_file(run_dir / "manifest.json"),
                "audit_sha256": sha256_file(run_dir / "audit.json"),
                "summary_sha256": sha256_file(run_dir / "summary.json"), "method_sha256": manifest["method_sha256"],
                "artefacts_sha256": {a["key"]: a["sha256"] for a in manifest["artefacts"] if a["deterministic"]},
                "primary_mean": prim["mean"], "primary_grouped_interval": prim["grouped_interval"]}
    return evidence, power


# ---------------------------------------------------------------------------------- freezing --
def build_protocol(cfg: dict, lockdir, root, evidence: dict, power: dict, test_only: bool,
                   now: str | None = None) -> dict:
    return {"protocol_version": 2, "frozen_at": now or _now(), "test_only": bool(test_only),
            **frozen_fields(cfg, lockdir, root), "power": power, "development_evidence": evidence}


def write_protocol(lockdir, protocol: dict) -> str:
    """protocol.json (canonical), protocol.sha256 and PREREGISTRATION.md; return the sha256."""
    lockdir = Path(lockdir)
    text = canonical_json(protocol)
    sha = sha256_text(text)
    atomic_write_text(lockdir / PROTOCOL, text)
    atomic_write_text(lockdir / PROTOCOL_SHA, f"{sha}  {PROTOCOL}\n")
    atomic_write_text(lockdir / PREREG, preregistration_note(protocol, sha))
    return sha


def _check_freeze_location(lockdir: Path, root, allow_standin: bool) -> bool:
    cfg = {"allow_standin_for_testing": allow_standin}
    try:
        return check_lock_location(cfg, lockdir, root)
    except SealError as exc:
        raise SealError(str(exc).replace("opened only with", "frozen only into")) from None


def _refuse_if_opened(lockdir, fixture: bool, action: str) -> None:
    """No protocol may be frozen or re-frozen once a (counted) opening started, finished or not."""
    looked = opening_table(ledger_lines(lockdir), labelled=fixture)
    if looked:
        r = looked[0]
        state = ("completed" if r["completed"] else
                 "NEVER COMPLETED (the sealed judgements were copied; the look is recorded)")
        raise SealError(f"REFUSED to {action}: {Path(lockdir) / LEDGER} records {len(looked)} opening(s) of the "
                        f"confirmation set, e.g. opening {r['opening']} of protocol {r['protocol_sha256']} started at "
                        f"{(r['started'] or r['completed']).get('time')} (ledger line {r['line']}), {state}. The "
                        "confirmation set has been looked at: it cannot test a new or re-frozen protocol.")


def freeze(cfg: dict, lockdir, dev_run, root, allow_standin_for_testing: bool = False, now: str | None = None) -> dict:
    """Freeze the protocol from a finished, audited development run; refuse to overwrite one."""
    lockdir = Path(lockdir)
    fixture = _check_freeze_location(lockdir, root, allow_standin_for_testing)
    if (lockdir / PROTOCOL).exists():
        raise SealError(f"{lockdir / PROTOCOL} already exists: a protocol is frozen once. (A code refactor that leaves "
                        "results identical: python scripts/confirm.py refreeze --reason ... ; a new preregistration: "
                        "move the old files away in a commit that says why.)")
    _refuse_if_opened(lockdir, fixture, "freeze a protocol")
    evidence, power = development_evidence(dev_run, cfg, lockdir, root, allow_standin_for_testing)
    test_only = evidence["scorer"] == STANDIN_LABEL
    fcfg = dict(cfg, scorer=STAND_IN if test_only else PINNED)
    protocol = build_protocol(fcfg, lockdir, root, evidence, power, test_only, now)
    sha = write_protocol(lockdir, protocol)
    append_ledger(lockdir, {"event": FROZEN, "time": protocol["frozen_at"], "protocol_sha256": sha,
                            "method_sha256": protocol["method"]["sha256"], "development_run": evidence["run"],
                            "development_manifest_sha256": evidence["manifest_sha256"],
                            "code_commit": git_state(root)["commit"], "labels": _freeze_labels(fixture, test_only)})
    return {"sha256": sha, "protocol": protocol}


def _freeze_labels(fixture: bool, test_only: bool) -> list[str]:
    return ([FIXTURE_LABEL] if fixture else []) + ([PROTOCOL_LABEL] if test_only else [])


def refreeze(cfg: dict, lockdir, root, reason: str, dev_run, now: str | None = None) -> dict:
    """Record a code change that leaves results identical: only the method may differ from the frozen
    protocol, no opening may have started, and a development run under the current code must
    reproduce the frozen development evidence byte for byte. Writes a new protocol + a ledger line."""
    lockdir = Path(lockdir)
    reason = (reason or "").strip()
    if not reason:
        raise SealError("REFUSED: a re-freeze must say why: --reason \"...\" (it goes into the ledger)")
    sha, old = verified_protocol(lockdir)
    fixture = _check_freeze_location(lockdir, root, bool(old.get("test_only")))
    _refuse_if_opened(lockdir, fixture, "re-freeze")
    fcfg = dict(cfg, scorer=old["model"]["scorer"])
    current = frozen_fields(fcfg, lockdir, root)
    changed = _setting_changes(old, current)
    if changed:
        raise SealError("REFUSED: settings or pins changed since freezing (" + ", ".join(changed[:12]) + "). A re-freeze "
                        "only records a code change that leaves every result identical; other changes are a new "
                        "preregistration (move the protocol away in a commit that says why, then freeze).")
    files = method_changes(old["method"]["files"], current["method"]["files"])
    if not files:
        raise SealError(f"REFUSED: nothing to re-freeze: the method is unchanged since {lockdir / PROTOCOL} was frozen.")
    evidence, power = development_evidence(dev_run, fcfg, lockdir, root, bool(old.get("test_only")))
    before = old["development_evidence"]["artefacts_sha256"]
    differ = sorted(k for k in set(before) | set(evidence["artefacts_sha256"])
                    if before.get(k) != evidence["artefacts_sha256"].get(k))
    if differ:
        raise SealError(f"REFUSED: the development run {dev_run} under the changed code ({', '.join(files)}) does not "
                        f"reproduce the frozen development evidence: {', '.join(differ)} differ. The change alters "
                        "results: it is a new method, to be preregistered anew, not re-frozen.")
    protocol = {**old, **current, "frozen_at": now or _now(), "power": power, "development_evidence": evidence,
                "refrozen_from": sha, "refreeze_reason": reason}
    new_sha = write_protocol(lockdir, protocol)
    append_ledger(lockdir, {"event": REFROZEN, "time": protocol["frozen_at"], "protocol_sha256": new_sha,
                            "previous_protocol_sha256": sha, "reason": reason, "changed_files": files,
                            "method_sha256": current["method"]["sha256"], "development_run": evidence["run"],
                            "code_commit": git_state(root)["commit"],
                            "labels": _freeze_labels(fixture, bool(old.get("test_only")))})
    return {"sha256": new_sha, "protocol": protocol, "changed_files": files}


def preregistration_note(p: dict, sha: str) -> str:
    pw = p["power"]
    label = "\n> TEST-ONLY protocol (frozen from a STAND-IN development run): not a preregistration.\n" \
        if p["test_only"] else ""
    refrozen = (f"\nRe-frozen from protocol `{p['refrozen_from']}` (a code change with identical development "
                f"results): {p['refreeze_reason']}\n" if p.get("refrozen_from") else "")
    return f"""# Preregistration of the confirmation analysis
{label}
Protocol: `protocol.json`, sha256 `{sha}`, frozen {p['frozen_at']}.
Unseal with: `snakemake confirm --cores 4 --config unseal={sha}`
{refrozen}
**Question.** {p['question']}

**Frozen.** Model {p['model']['repo']} @ {p['model']['revision']} (weights sha256
{p['model']['files_sha256']['model.safetensors']}; scorer {p['model']['scorer']}); data, split and candidate pins
(candidate table `{p['candidates']['file']}` sha256 {p['candidates']['file_sha256']}); the method (library, rule
scripts, rules, Snakefile, schema, requirements lock: {len(p['method']['files'])} files, combined sha256
{p['method']['sha256']}); text template `{p['text_template']}`; blend k = {p['blend']['k']}; tie rule: {p['tie_rule']};
grouping: {p['grouping_rule']}; B = {p['bootstrap']['B']}, seed {p['bootstrap']['seed']}, percentiles
{p['bootstrap']['percentiles']} (linear); threshold {p['threshold']}; primary {p['comparisons']['primary']}; guardrails
{p['evalstats']['guardrails']}; declared slices and weights {p['evalstats']['slices']}.

**Decision rule.** {p['decision_rule']}

**Power.** Minimum detectable mean primary difference on the {pw['n_confirmation']} confirmation queries at
α = {pw['alpha']} (two-sided) and power {pw['power']}:

    MDE = (z_(1-α/2) + z_power) * sd_eff / sqrt(n_conf) = {pw['mde_confirmation']:.6f}

with sd_eff = {pw['sd_eff']:.6f} = sqrt(n_dev * Var(mean Δ_dev)), n_dev = {pw['n_development']}, and the grouped
(cluster-robust, linearised) variance Var(mean Δ_dev) = G/(G-1) * Σ_g (S_g - n_g * mean Δ)^2 / n_dev^2
= {pw['grouped_variance_of_mean']:.3e} of the development run ({p['development_evidence']['run']}, scorer
{p['development_evidence']['scorer']}, manifest sha256 {p['development_evidence']['manifest_sha256']}, audited).
A true gain smaller than the MDE will often be missed; the threshold {p['threshold']} is the practical question.
"""


# ------------------------------------------------------------------------------------ ledger --
def ledger_lines(lockdir) -> list[tuple[int, dict]]:
    """(line number, entry) of every ledger line; an unreadable line stops (fail closed)."""
    p = Path(lockdir) / LEDGER
    if not p.exists():
        return []
    return _parse_ledger(p.read_text(encoding="utf-8"), p)


def _parse_ledger(text: str, path) -> list[tuple[int, dict]]:
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: {exc.msg}. The ledger is append-only: restore it from "
                            "git (git checkout -- the ledger), never edit it.") from None
        if not isinstance(entry, dict):
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: not a JSON object. Restore it from git.")
        if entry.get("event", COMPLETED) not in EVENTS:
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: unknown event {entry['event']!r} (known: "
                            f"{', '.join(EVENTS)}). Restore the ledger from git.")
        out.append((n, entry))
    return out


def read_ledger(lockdir) -> list[dict]:
    return [e for _, e in ledger_lines(lockdir)]


def event_of(entry: dict) -> str:
    """A line's event; lines written before events existed recorded completed openings."""
    return entry.get("event", COMPLETED)


def is_labelled(entry: dict) -> bool:
    return bool(entry.get("labels"))


def opening_table(lines: list[tuple[int, dict]], labelled: bool, sha: str | None = None) -> list[dict]:
    """Openings (started or completed) of one class - labelled (test-only) or not - and, with
    ``sha``, of one protocol: [{"protocol_sha256", "opening", "run", "line", "started", "completed"}]."""
    table: dict[tuple[str, int], dict] = {}
    for n, e in lines:
        ev = event_of(e)
        if ev not in OPENING_EVENTS or is_labelled(e) != labelled or (sha and e.get("protocol_sha256") != sha):
            continue
        row = table.setdefault((e.get("protocol_sha256"), e.get("opening")),
                               {"protocol_sha256": e.get("protocol_sha256"), "opening": e.get("opening"),
                                "run": e.get("run"), "line": n, "started": None, "completed": None})
        if row[ev] is None:
            row[ev] = e
    return sorted(table.values(), key=lambda r: (r["line"]))


def next_opening(lines, sha: str, labelled: bool) -> int:
    return max([r["opening"] for r in opening_table(lines, labelled, sha) if isinstance(r["opening"], int)] + [0]) + 1


def opening_run_name(sha: str, opening: int, labelled: bool) -> str:
    return f"confirm-{sha[:12]}-{'test-' if labelled else ''}{opening}"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append_locked(path: Path, entry: dict, check=None) -> int:
    """Append one JSON line under an exclusive lock, flushed and fsynced; ``check(lines)`` may refuse
    first. Return the new line's number."""
    line = json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n"
    created = not path.exists()
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        text = fh.read()
        if text and not text.endswith("\n"):
            raise SealError(f"UNREADABLE LEDGER {path}: its last line is unterminated (truncated?). Restore it from git.")
        lines = _parse_ledger(text, path)
        if check is not None:
            check(lines)
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        _fsync_dir(path.parent)
    return len(text.splitlines()) + 1


def append_ledger(lockdir, entry: dict) -> int:
    """Append one JSON line (never rewrites earlier lines); return its line number."""
    return _append_locked(Path(lockdir) / LEDGER, entry)


def record_start(lockdir, entry: dict) -> int:
    """Record that an opening starts, BEFORE any sealed judgement is copied. Refuses when this opening
    number was already started (a concurrent opening, or a replayed job): every look gets its own line."""
    def check(lines):
        expected = next_opening(lines, entry["protocol_sha256"], is_labelled(entry))
        if entry["opening"] != expected:
            raise SealError(f"REFUSED: opening {entry['opening']} of protocol {entry['protocol_sha256']} is already "
                            f"started in {Path(lockdir) / LEDGER} (the next opening is number {expected}). Each look is "
                            "recorded once: start a new opening with snakemake confirm.")
    return _append_locked(Path(lockdir) / LEDGER, entry, check)


def start_entry(u: dict, cfg: dict, lockdir) -> dict:
    """The 'started' ledger line of an opening, without its time (added when it is written)."""
    pins = read_json(Path(lockdir) / "data_pins.json")
    name = sealed_name(lockdir)
    sealed = pins["files"][name]
    return {"event": STARTED, "protocol_sha256": u["sha256"], "opening": u["opening"], "run": u["run"],
            "labels": u["labels"], "code_commit": u["git"]["commit"], "code_uncommitted_paths": u["git"]["dirty"],
            "method_sha256": u["method_sha256"], "sealed_file": name, "sealed_sha256": sealed["sha256"],
            "sealed_content_sha256": sealed.get("content_sha256"), "data_url": pins.get("zip", {}).get("url"),
            "data_source": {"data_mirror": cfg.get("data_mirror", ""), "data_zip": cfg.get("data_zip", ""),
                            "url": cfg["data"]["url"]}}


# --------------------------------------------------------------------------------- the guards --
def _git(root, *args, text=True):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=text)


def git_state(root) -> dict:
    """{"commit": sha or None, "dirty": [paths with uncommitted changes], "is_repo": bool}."""
    root = Path(root)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *GUARDED_PATHS],
                                cwd=root, capture_output=True, text=True, check=True)
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return {"is_repo": False, "commit": None, "dirty": []}
    dirty = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return {"is_repo": True, "commit": commit.stdout.strip(), "dirty": dirty}


def untracked_files(root, rel_paths) -> list[str]:
    """The paths git does not track (also ignored ones, which `git status` does not show)."""
    return [p for p in rel_paths if _git(root, "ls-files", "--error-unmatch", "--", p).returncode != 0]


def ledger_history_problems(root, rel: str) -> list[str]:
    """Every committed version of the ledger must be a prefix of the current one (append-only)."""
    current = (Path(root) / rel).read_bytes() if (Path(root) / rel).exists() else b""
    log = _git(root, "log", "--format=%H", "--", rel)
    problems = []
    for commit in log.stdout.split():
        old = _git(root, "show", f"{commit}:{rel}", text=False)
        if old.returncode == 0 and not current.startswith(old.stdout):
            problems.append(f"commit {commit[:12]} holds {len(old.stdout.splitlines())} ledger lines that the current "
                            f"{rel} does not begin with")
    return problems


def orphan_results(results, lines: list[tuple[int, dict]]) -> list[str]:
    """results/confirm-* folders the ledger does not know (a look that left no line)."""
    if results is None or not Path(results).is_dir():
        return []
    known = {e.get("run") for _, e in lines}
    return sorted(p.name for p in Path(results).glob("confirm-*") if p.is_dir() and p.name not in known)


def verified_protocol(lockdir, token: str | None = None) -> tuple[str, dict]:
    """(sha256, protocol) after checking protocol.json against protocol.sha256 (and the token)."""
    lockdir = Path(lockdir)
    how = "Unseal with: snakemake confirm --cores 4 --config unseal=<sha256 in lockfiles/protocol.sha256>"
    if not (lockdir / PROTOCOL).exists():
        raise SealError(f"THE CONFIRMATION IS SEALED: no frozen protocol at {lockdir / PROTOCOL}. Freeze one first: "
                        "python scripts/confirm.py freeze --dev-run results/dev (another study: add --study <its name "
                        "or file> and use its run, results/<study>/dev)")
    actual = sha256_file(lockdir / PROTOCOL)
    recorded = (lockdir / PROTOCOL_SHA).read_text().split()[0] if (lockdir / PROTOCOL_SHA).exists() else None
    if recorded != actual:
        raise SealError(f"REFUSED: {lockdir / PROTOCOL} changed since it was frozen (sha256 now {actual}, recorded "
                        f"{recorded}). Restore the frozen protocol from git.")
    if token is not None and token != actual:
        raise SealError(f"REFUSED: the unseal token {token!r} is not the frozen protocol's sha256 {actual}. {how}")
    return actual, read_json(lockdir / PROTOCOL)


def _check_frozen(cfg: dict, lockdir, root, protocol: dict) -> str:
    """Settings, pins and method equal the frozen ones; return the current method sha256."""
    current = frozen_fields(cfg, lockdir, root)
    changed = _setting_changes(protocol, current)
    if changed:
        raise SealError("REFUSED: pins or settings changed since the protocol was frozen: " + ", ".join(changed[:12])
                        + ". Restore them (config/config.yaml, lockfiles/) to the frozen values; never re-tune on the "
                          "confirmation set.")
    files = method_changes((protocol.get("method") or {}).get("files", {}), current["method"]["files"])
    if files:
        raise SealError("REFUSED: the method changed since the protocol was frozen: " + ", ".join(files[:20])
                        + (f" and {len(files) - 20} more" if len(files) > 20 else "") + ". Restore the frozen code "
                        "(git checkout <the freezing commit> -- those files). A refactor that leaves results identical "
                        "must be re-frozen, explicitly and before any opening: python scripts/confirm.py refreeze "
                        "--reason \"...\" --dev-run results/dev.")
    return current["method"]["sha256"]


def _check_tree(cfg: dict, lockdir: Path, root, fixture: bool, labels: list[str]) -> dict:
    """Clean, committed code; for the repository's lockfiles: protocol and ledger tracked, and the
    ledger's git history append-only."""
    git = git_state(root)
    if not git["is_repo"] or git["dirty"]:
        if not cfg.get("allow_dirty_for_testing"):
            what = "is not a git checkout" if not git["is_repo"] else \
                "has uncommitted changes in " + ", ".join(git["dirty"][:10])
            raise SealError(f"REFUSED: the working tree {what}. The opening must be traceable to a commit: COMMIT them "
                            "first (git add -A && git commit); never stash or discard lockfiles/ - the protocol and "
                            "the ledger must stay in the history. For the TEST SUITE's fixture lock folder ONLY: "
                            "--config allow_dirty_for_testing=true (labelled in the report and the ledger).")
        labels.append(DIRTY_LABEL)
    if not fixture:
        lock_rel = Path(os.path.relpath(Path(lockdir).resolve(), Path(root).resolve())).as_posix()
        rel = [f"{lock_rel}/{n}" for n in (PROTOCOL, PROTOCOL_SHA, LEDGER)]
        missing = untracked_files(root, rel)
        if missing:
            raise SealError(f"REFUSED: {', '.join(missing)} not tracked by git. The protocol and the ledger must be "
                            "committed (git add lockfiles && git commit) before the confirmation is opened.")
        history = ledger_history_problems(root, f"{lock_rel}/{LEDGER}")
        if history:
            raise SealError(f"REFUSED: the ledger {lock_rel}/{LEDGER} was rewritten: " + "; ".join(history[:3])
                            + ". It is append-only: restore every recorded line from git.")
    return git


def _check_ledger(lockdir: Path, sha: str, labelled: bool, lines, results) -> None:
    if not any(event_of(e) in (FROZEN, REFROZEN) and e.get("protocol_sha256") == sha for _, e in lines):
        raise SealError(f"REFUSED: {lockdir / LEDGER} does not record the freezing of protocol {sha} (scripts/confirm.py "
                        "freeze writes both). Restore the ledger from git.")
    other = [r for r in opening_table(lines, labelled) if r["protocol_sha256"] != sha]
    if other:
        raise SealError(f"REFUSED: {lockdir / LEDGER} line {other[0]['line']} records an opening under a different "
                        f"protocol ({other[0]['protocol_sha256']}). The confirmation set has been opened; it cannot be "
                        "used to test a re-tuned protocol.")
    orphans = orphan_results(results, lines)
    if orphans:
        raise SealError(f"REFUSED: {', '.join(orphans)} in {results} are confirmation results the ledger "
                        f"{lockdir / LEDGER} does not record (a look without a trace, or a ledger that lost lines). "
                        "Restore the ledger from git; a folder made by hand must be removed by hand.")


def _labels(cfg: dict, protocol: dict, fixture: bool) -> list[str]:
    labels = [FIXTURE_LABEL] if fixture else []
    if protocol.get("test_only"):
        if not fixture:
            raise SealError(f"REFUSED: the frozen protocol is TEST-ONLY (frozen from a STAND-IN run) and this is the "
                            f"repository's lock folder: it cannot open the real confirmation set. Freeze a protocol "
                            "from a development run with the pinned model.")
        labels.append(PROTOCOL_LABEL)
    if cfg["scorer"] != PINNED:
        if not cfg.get("allow_standin_for_testing"):
            raise SealError("REFUSED: the confirmation cannot be run with the STAND-IN scorer (its scores mean "
                            "nothing). Supply the pinned cross-encoder (--config model_dir=...) and use scorer=pinned.")
        labels.append(STANDIN_RUN_LABEL)
    return labels


def check_unseal(cfg: dict, lockdir, root, results=None) -> dict:
    """Run every guard; return {"sha256", "protocol", "opening", "run", "previous", "unfinished", "git",
    "labels", "test_fixture", "method_sha256", "start"} or raise SealError."""
    lockdir = Path(lockdir)
    if str(cfg.get("repin") or "").strip():
        raise SealError(f"REFUSED: repin={cfg['repin']} in confirmation mode. The confirmation is analysed with the pins "
                        "frozen in the protocol; re-pinning is a separate, committed act before freezing. Drop repin.")
    token = str(cfg.get("unseal") or "").strip()
    if not token:
        raise SealError("THE CONFIRMATION IS SEALED: no unseal token. Unseal with: snakemake confirm --cores 4 "
                        "--config unseal=<sha256 in lockfiles/protocol.sha256>")
    fixture = check_lock_location(cfg, lockdir, root)
    sha, protocol = verified_protocol(lockdir, token)
    labels = _labels(cfg, protocol, fixture)
    method = _check_frozen(cfg, lockdir, root, protocol)
    git = _check_tree(cfg, lockdir, root, fixture, labels)
    lines = ledger_lines(lockdir)
    labelled = bool(labels)
    _check_ledger(lockdir, sha, labelled, lines, results)
    table = opening_table(lines, labelled, sha)
    opening = next_opening(lines, sha, labelled)
    out = {"sha256": sha, "protocol": protocol, "opening": opening, "run": opening_run_name(sha, opening, labelled),
           "previous": [r["completed"] for r in table if r["completed"]],
           "unfinished": [{"opening": r["opening"], "run": r["run"], "line": r["line"], "time": r["started"].get("time")}
                          for r in table if r["started"] and not r["completed"]],
           "git": git, "labels": labels, "test_fixture": fixture, "method_sha256": method}
    out["start"] = start_entry(out, cfg, lockdir)
    return out


# --------------------------------------------------------------------------------- the status --
def describe(lockdir, root, results=None) -> str:
    """What `confirm.py status` prints: the protocol, every counted opening (started / completed),
    freezes, labelled lines (never counted) and results folders the ledger does not know."""
    lockdir = Path(lockdir)
    p = lockdir / PROTOCOL
    fixture = is_test_fixture(lockdir, root)
    lines = ledger_lines(lockdir)
    out = []
    if p.exists():
        sha = (lockdir / PROTOCOL_SHA).read_text().split()[0] if (lockdir / PROTOCOL_SHA).exists() else "(no sha file)"
        out.append(f"protocol {p} sha256 {sha}" + (" (TEST FIXTURE lock folder)" if fixture else ""))
    else:
        out.append(f"no protocol frozen ({p} absent); the confirmation set is sealed")
    for n, e in lines:
        if event_of(e) in (FROZEN, REFROZEN):
            extra = (f" from {str(e.get('previous_protocol_sha256'))[:12]}: {e.get('reason')}"
                     if event_of(e) == REFROZEN else "")
            out.append(f"  {event_of(e)} {str(e.get('protocol_sha256'))[:12]} at {e.get('time')} (ledger line {n}){extra}")
    table = opening_table(lines, labelled=fixture)
    unfinished = [r for r in table if not r["completed"]]
    out.append(f"openings recorded: {len(table)} ({len(table) - len(unfinished)} completed, {len(unfinished)} started "
               "but not completed)")
    for r in table:
        s, c = r["started"] or {}, r["completed"]
        head = f"  opening {r['opening']} of {str(r['protocol_sha256'])[:12]} ({r['run']}), ledger line {r['line']}"
        if c:
            pr = c.get("primary", {})
            out.append(f"{head}: started {s.get('time', '?')}, completed {c.get('time')}: primary mean "
                       f"{pr.get('mean')}, reaches threshold {pr.get('reaches_threshold')}"
                       + (f", reproduced byte-identical {c['reproduced_byte_identical']}"
                          if "reproduced_byte_identical" in c else "") + f", labels {c.get('labels') or 'none'}")
        else:
            out.append(f"{head}: STARTED {s.get('time')} and NOT COMPLETED (the sealed judgements were copied; this "
                       "look is recorded and counts)")
    ignored = [n for n, e in lines if event_of(e) in OPENING_EVENTS and is_labelled(e) != fixture]
    if ignored:
        out.append(f"lines of the other class (labelled TEST-ONLY vs real), never counted here: {ignored}")
    orphans = orphan_results(results, lines)
    if orphans:
        out.append(f"WARNING: confirmation results the ledger does not know: {orphans}")
    return "\n".join(out)

