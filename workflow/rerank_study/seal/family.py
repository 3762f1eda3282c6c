"""A family of studies confirmed together: one decision across datasets, frozen BEFORE any of its studies
opens its sealed set, and taken on the studies' completed openings (docs/across-datasets.md, section 6, "A
confirmation across datasets")

A family's lock folder (``lockfiles/families/<name>/``, or a folder named by its path) holds its own records,
none of them any study's method (``method.study_pins``):

* ``family_protocol.json`` (canonical JSON) and ``family_protocol.sha256``: the studies in their order, each
  with the sha256 of its own frozen protocol; the ``synthesis`` block (weighting, τ² estimator, B, seed,
  level, the declared family of tests); the primary comparison and metric; the practical threshold the
  studies share; the decision rule;
* ``family_ledger.jsonl`` (append-only, ``ledger.append_locked``): a ``frozen`` line, then a ``completed``
  line for each pooled confirmation (its decision).

Freezing refuses when a study has no frozen protocol, when the studies disagree on the threshold, the primary
comparison or the metric, and - naming the study - when any ledger, the history or a local trace shows an
opening of a study's sealed set (``freeze.refuse_if_opened``). The pooled confirmation (``snakemake
synthesis_confirm``) refuses before any job unless every study has a completed opening under the protocol the
family recorded, started after the family was frozen (``confirmation_plan``).

Pure: ``family_folder``, ``common_value``, ``decision_rule``, ``build_protocol``, ``confirmation_plan``,
``decision``, ``completed_entry``. The rest reads the lock folders and ledgers, and writes the family's.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import SealError
from ..core.fileio import (
    VerifiedFile,
    atomic_write_text,
    canonical_json,
    input_bytes,
    input_text,
    read_json,
    sha256_bytes,
    sha256_text,
)
from ..synthesis import synthesis
from . import ledger as led
from . import locations as loc
from . import registry
from .protocol import unseal_command, verified_protocol

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
FAMILY_VERSION = 1


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


# ------------------------------------------------------------------------------------------ pure --
def family_folder(value: str, root) -> Path:
    """A family's lock folder: a name (``lockfiles/families/<name>`` of the repository ``root``) or a folder
    path (it holds a '/')."""
    value = str(value or "").strip()
    if "/" in value:
        return Path(value)
    if not NAME.match(value):
        raise SealError(f"REFUSED: the family name {value!r} is not a name (letters, digits, '.', '_', '-'; "
                        "or the path of a family's folder). Fix: --config family=<name> (as frozen by "
                        "python scripts/confirm.py freeze-family --family <name> ...)")
    return Path(root) / loc.FAMILY_LOCKDIRS / value


def common_value(what: str, values: Mapping[str, object], fix: str) -> object:
    """The one value every study has (``values``: study -> value); refuse naming each study's value."""
    if len({repr(v) for v in values.values()}) > 1:
        named = ", ".join(f"{s}: {v!r}" for s, v in values.items())
        raise SealError(f"REFUSED: the studies of the family disagree on {what} ({named}). A family is one "
                        f"question with one decision. Fix: {fix}")
    return next(iter(values.values()))


def decision_rule(block: Mapping, threshold: float) -> str:
    """The family's decision rule, as text."""
    return (f"The family confirms when the lower bound of the pooled primary delta's {block['level']} "
            f"interval (stratified grouped bootstrap, weighting {block['weighting']}, B {block['B']}, seed "
            f"{block['seed']}), computed on each study's first completed opening of its sealed set under the "
            f"protocol recorded here, lies above the practical threshold {threshold}. Otherwise it does not "
            "confirm; the result is reported either way and nothing is re-tested.")


def build_protocol(name: str, studies: Sequence[Mapping], block: Mapping, threshold: float, comparison: str,
                   metric: str, now: str) -> dict:
    """The family protocol: ``studies`` in their order, each {"name", "dataset", "study_file", "lockdir",
    "protocol_sha256"}; ``block`` the config's synthesis block."""
    return {"family_version": FAMILY_VERSION, "name": name, "frozen_at": now,
            "studies": [dict(s) for s in studies], "synthesis": dict(block), "comparison": comparison,
            "metric": metric, "threshold": threshold, "decision_rule": decision_rule(block, threshold)}


def _time(text) -> _dt.datetime | None:
    try:
        t = _dt.datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.UTC)


def _start_time(row: Mapping):
    """When an opening started: its started line, else what its completed line says."""
    if row.get("started"):
        return row["started"].get("time")
    done = row.get("completed") or {}
    return done.get("started_time") or done.get("time")


def _problems_of(study: Mapping, frozen_at: str, found: Mapping) -> tuple[list[str], dict | None]:
    """(problems, the opening to use) of one study: ``study`` as the family recorded it; ``found``:
    {"protocol_sha256": its protocol's sha256 now (None: none), "openings": the openings of its sealed set
    (``ledger.openings`` rows), "unseal": its opening command}."""
    name, want = study["name"], study["protocol_sha256"]
    now = found.get("protocol_sha256")
    problems = []
    if now != want:
        problems.append(f"study {name!r}: its protocol ({study['lockdir']}/{loc.PROTOCOL}) has sha256 "
                        f"{now or 'none (no protocol.json)'}, the family recorded {want}. Fix: restore the "
                        f"study's frozen protocol from git (git log -- {study['lockdir']}/{loc.PROTOCOL}); a "
                        "study re-frozen after the family was frozen has left it: freeze a new family before "
                        "any of its studies opens.")
    rows = found.get("openings") or []
    for r in rows:
        if r["protocol_sha256"] != want:
            problems.append(f"study {name!r}: {r['source']} line {r['line']} records opening "
                            f"{r['opening']} of its sealed set under protocol {r['protocol_sha256']}, not "
                            f"{want} (the one the family recorded). Fix: none for this family: its "
                            "confirmation set was looked at under another protocol; report the studies "
                            "separately.")
    frozen = _time(frozen_at)
    mine = sorted((r for r in rows if r["protocol_sha256"] == want), key=lambda r: (r["opening"] or 0))
    for r in mine:
        started = _time(_start_time(r))
        if frozen is None or started is None or started < frozen:
            problems.append(f"study {name!r}: opening {r['opening']} ({r['run']}) started at "
                            f"{_start_time(r)} ({r['source']} line {r['line']}), before the family was "
                            f"frozen at {frozen_at}: that look was not taken under the family protocol. Fix: "
                            "none for this family; a family is frozen before any of its studies opens. "
                            "Report the studies separately.")
    if not rows and now == want:
        problems.append(f"study {name!r} has not opened yet: no ledger records an opening of its sealed set "
                        f"under protocol {want}. Fix: open it: {found.get('unseal')}")
    done = [r for r in mine if r["completed"]]
    if mine and not done:
        r = mine[0]
        problems.append(f"study {name!r}: opening {r['opening']} ({r['run']}) started at {_start_time(r)} "
                        f"and has not completed ({r['source']} line {r['line']}; the look is recorded and "
                        f"counts). Fix: rerun {found.get('unseal')}: it starts the next opening of the same "
                        "protocol, and the first opening that completes is the one the family reads.")
    return problems, (done[0] if done else None)


def confirmation_plan(protocol: Mapping, frozen_at: str, found: Mapping[str, Mapping]) -> dict[str, dict]:
    """Each study's opening the pooled confirmation reads, {study: {"run", "opening", "protocol_sha256",
    "started", "completed"}}, or a SealError naming every study that is not ready and its fix. A study is
    ready when its protocol is still the one the family recorded, and its sealed set has a completed opening
    under it, every opening under it having started at or after ``frozen_at`` (the family ledger's frozen
    line) and none under any other protocol."""
    problems, plan = [], {}
    for study in protocol["studies"]:
        found_here = found.get(study["name"], {})
        bad, row = _problems_of(study, frozen_at, found_here)
        problems += bad
        if row is not None and not bad:
            plan[study["name"]] = {"run": row["run"], "opening": row["opening"],
                                   "protocol_sha256": row["protocol_sha256"], "started": _start_time(row),
                                   "completed": row["completed"].get("time")}
    if problems:
        raise SealError(f"REFUSED: the family {protocol['name']!r} (frozen at {frozen_at}) cannot be "
                        "confirmed; nothing was computed:\n  - " + "\n  - ".join(problems))
    return plan


def decision(pooled: Mapping, threshold: float, rule: str) -> dict:
    """The family's decision from the synthesis's pooled block: met when the interval's lower bound lies
    strictly above the threshold."""
    lower = pooled["interval"][0]
    return {"rule": rule, "weighting": pooled["weighting"], "estimate": pooled["estimate"],
            "interval": list(pooled["interval"]), "lower_bound": lower, "threshold": threshold,
            "met": bool(lower > threshold)}


def decision_text(name: str, d: Mapping) -> str:
    verdict = "MET: the family confirms" if d["met"] else "NOT MET: the family does not confirm"
    return (f"Family {name!r}: pooled primary delta {d['estimate']:.6f} (weighting {d['weighting']}), "
            f"interval [{d['interval'][0]:.6f}, {d['interval'][1]:.6f}]; lower bound {d['lower_bound']:.6f} "
            f"vs threshold {d['threshold']}: {verdict}.")


def completed_entry(family: Mapping, result_sha256: str, d: Mapping, now: str) -> dict:
    """The family ledger's ``completed`` line of a pooled confirmation."""
    return {"event": led.COMPLETED, "time": now, "family": family["name"],
            "family_protocol_sha256": family["sha256"], "openings": family["openings"],
            "synthesis_sha256": result_sha256, "decision": dict(d)}


# ---------------------------------------------------------------------------- the lock folders --
def study_protocol(cfg: dict) -> tuple[str, dict]:
    """(sha256, protocol) of a study's frozen protocol, naming the study when there is none."""
    try:
        return verified_protocol(Path(cfg["lockdir"]))
    except SealError as exc:
        raise SealError(f"study {cfg['study']['name']!r}: {exc}") from None


def study_openings(cfg: dict, root) -> list[dict]:
    """Every opening of the study's sealed set (or one overlapping it) in any ledger, the git history of any
    ref, or a local trace (``ledger.openings``, as the opening's guard counts them)."""
    from . import guard

    lockdir = Path(cfg["lockdir"])
    sets = registry.build(root, [lockdir])
    return led.openings(guard.all_lines(root, sets), guard.belongs_to(registry.set_of(sets, lockdir), sets))


def freeze_family(folder, configs: Mapping[str, dict], block: Mapping, root, now: str | None = None) -> dict:
    """Freeze a family over the studies ``configs`` (name -> validated config, in order) with the synthesis
    ``block``: before any of them opens. Writes the protocol, its sha256 and the ledger's frozen line."""
    from .freeze import refuse_if_opened

    folder = Path(folder)
    name = folder.name
    if not NAME.match(name):
        raise SealError(f"REFUSED: the family folder {folder} is not named as a family (letters, digits, "
                        "'.', '_', '-'). Fix: --family <name>")
    if len(configs) < 2:
        raise SealError(f"REFUSED: a family needs two or more studies (got {list(configs)}). Fix: --studies "
                        "[<a>,<b>,...], one study per dataset.")
    try:
        synthesis.check_declared(block)
        synthesis.check_tests(block, synthesis.shared_comparisons(
            [list(c["comparisons"]["all"]) for c in configs.values()]))
    except ValueError as exc:
        raise SealError(f"REFUSED: {exc}. Nothing was frozen.") from None
    if (folder / loc.FAMILY_PROTOCOL).exists():
        raise SealError(f"REFUSED: {folder / loc.FAMILY_PROTOCOL} already exists: a family is frozen once. A "
                        "new question before any opening is a new family: another --family name.")
    frozen = {}
    for study, cfg in configs.items():
        frozen[study] = study_protocol(cfg)
        lockdir = Path(cfg["lockdir"])
        try:
            refuse_if_opened(cfg, lockdir, root, registry.build(root, [lockdir]), "freeze a family")
        except SealError as exc:
            raise SealError(f"study {study!r} ({lockdir}): {exc} A family is frozen before any of its "
                            "studies opens. Fix: leave this study out of the family, or report the studies "
                            "separately.") from None
    fix = ("freeze the family over studies that ask one question (or give them the same setting and "
           "re-freeze each study before any opening)")
    threshold = common_value("the practical threshold (threshold)",
                             {s: p["threshold"] for s, (_, p) in frozen.items()}, fix)
    comparison = common_value("the primary comparison (comparisons.primary)",
                              {s: p["comparisons"]["primary"] for s, (_, p) in frozen.items()}, fix)
    metric = common_value("the metric (metrics.ndcg_k)",
                          {s: f"ndcg@{p['metrics']['ndcg_k']}" for s, (_, p) in frozen.items()}, fix)
    studies = [{"name": s, "dataset": c["study"]["dataset"],
                "study_file": loc.relative(c["study_file"], root) if c.get("study_file") else None,
                "lockdir": loc.relative(c["lockdir"], root), "protocol_sha256": frozen[s][0]}
               for s, c in configs.items()]
    protocol = build_protocol(name, studies, block, threshold, comparison, metric, now or _now())
    labels = ([led.FIXTURE_LABEL] if any(loc.is_test_fixture(c["lockdir"], root) for c in configs.values())
              else []) + ([led.PROTOCOL_LABEL] if any(p.get("test_only") for _, p in frozen.values()) else [])
    folder.mkdir(parents=True, exist_ok=True)
    text = canonical_json(protocol)
    sha = sha256_text(text)
    atomic_write_text(folder / loc.FAMILY_PROTOCOL, text)
    atomic_write_text(folder / loc.FAMILY_SHA, f"{sha}  {loc.FAMILY_PROTOCOL}\n")
    led.append_locked(folder / loc.FAMILY_LEDGER,
                      {"event": led.FROZEN, "time": protocol["frozen_at"], "family": name,
                       "family_protocol_sha256": sha,
                       "studies": {s["name"]: s["protocol_sha256"] for s in studies}, "labels": labels})
    return {"sha256": sha, "protocol": protocol, "folder": folder}


def verified_family(folder) -> tuple[str, dict, dict]:
    """(sha256, protocol, its frozen ledger line) after checking the protocol against its sha256 file."""
    folder = Path(folder)
    path = folder / loc.FAMILY_PROTOCOL
    if not path.is_file():
        raise SealError(f"REFUSED: no family protocol at {path}. Fix: freeze it first, before any of its "
                        "studies opens: python scripts/confirm.py freeze-family --family <name> --configfile "
                        "<synthesis.yaml> --studies [<a>,<b>,...]")
    data = input_bytes(path)
    actual = sha256_bytes(data)
    sha_file = folder / loc.FAMILY_SHA
    recorded = input_text(sha_file).split()[0] if sha_file.is_file() else None
    if recorded != actual:
        raise SealError(f"REFUSED: {path} changed since it was frozen (sha256 now {actual}, recorded in "
                        f"{sha_file}: {recorded}). Fix: restore the family's files from git (git checkout -- "
                        f"{folder}).")
    protocol = read_json(VerifiedFile(path, data))
    lines = [e for _, e in led.parse(input_text(folder / loc.FAMILY_LEDGER), folder / loc.FAMILY_LEDGER)] \
        if (folder / loc.FAMILY_LEDGER).is_file() else []
    frozen = [e for e in lines if e.get("event") == led.FROZEN and e.get("family_protocol_sha256") == actual]
    if not frozen:
        raise SealError(f"REFUSED: {folder / loc.FAMILY_LEDGER} does not record the freezing of the family "
                        f"protocol {actual} (freeze-family writes both). Fix: restore the ledger from git.")
    return actual, protocol, frozen[0]


def check_confirmation(config: dict, configs: Mapping[str, dict], root) -> dict:
    """The parse-time check of ``snakemake synthesis_confirm --config family=<name> studies=[...]``: the
    family is frozen, the invocation names its studies in its order and its frozen synthesis block, and every
    study is ready (``confirmation_plan``). Returns {"name", "folder", "sha256", "protocol", "openings"}."""
    folder = family_folder(config["family"], root)
    sha, protocol, frozen = verified_family(folder)
    names = [s["name"] for s in protocol["studies"]]
    if list(configs) != names:
        raise SealError(f"REFUSED: family {protocol['name']!r} ({folder / loc.FAMILY_PROTOCOL}) is the "
                        f"studies {names}, in that order; studies= names {list(configs)}. Fix: --config "
                        "studies=[" + ",".join(s["study_file"] or s["name"] for s in protocol["studies"])
                        + "]")
    if dict(config["synthesis"]) != protocol["synthesis"]:
        differ = sorted(k for k in set(protocol["synthesis"]) | set(config["synthesis"])
                        if protocol["synthesis"].get(k) != config["synthesis"].get(k))
        values = "; ".join(f"synthesis.{k}: frozen {protocol['synthesis'].get(k)!r}, now "
                           f"{config['synthesis'].get(k)!r}" for k in differ)
        raise SealError(f"REFUSED: the synthesis settings differ from the ones family {protocol['name']!r} "
                        f"froze ({values}). Fix: give the config file the family was frozen with "
                        f"(--configfile <synthesis.yaml>); frozen: {folder / loc.FAMILY_PROTOCOL}")
    found = {}
    for study in protocol["studies"]:
        cfg = configs[study["name"]]
        lockdir = Path(cfg["lockdir"])
        try:
            now = verified_protocol(lockdir)[0] if (lockdir / loc.PROTOCOL).is_file() else None
        except SealError:
            now = "changed since it was frozen (protocol.json does not match protocol.sha256)"
        found[study["name"]] = {"protocol_sha256": now, "openings": study_openings(cfg, root),
                                "unseal": unseal_command(cfg, lockdir)}
    plan = confirmation_plan(protocol, frozen["time"], found)
    for study, row in plan.items():
        run = Path(configs[study]["results"]) / row["run"]
        if not (run / "summary.json").is_file():
            raise SealError(f"REFUSED: study {study!r}: its completed opening {row['opening']} ran in {run}, "
                            "which holds no summary.json here. Fix: run from the folder that holds the "
                            "opening's results (or restore them); never re-open to replace them.")
    return {"name": protocol["name"], "folder": str(folder), "sha256": sha, "protocol": protocol,
            "openings": plan}


def record_completed(folder, entry: dict) -> int:
    """Append the pooled confirmation's completed line to the family's ledger; its line number."""
    return led.append_locked(Path(folder) / loc.FAMILY_LEDGER, entry)
