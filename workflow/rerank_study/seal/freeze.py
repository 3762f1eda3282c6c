"""Freezing a protocol from a finished development run, and re-freezing it after a refactor.

Neither is possible once any ledger of the registry (or a local trace) shows the sealed set - or one that
overlaps it - started: a new protocol cannot claim a first look.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ..core import layout
from ..core.errors import SealError
from ..core.fileio import atomic_path, read_once, sha256_bytes
from ..core.names import PINNED, RUN_FILE, STAND_IN, STANDIN_LABEL
from ..reranker import reranker_run
from . import guard, registry, tree
from . import ledger as led
from . import locations as loc
from .evidence import development_evidence
from .method import method_changes
from .protocol import (
    build_protocol,
    frozen_fields,
    refreeze_command,
    setting_changes,
    verified_protocol,
    write_protocol,
)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def _location(cfg: dict, lockdir: Path, root, allow_standin: bool):
    sets = registry.build(root, [lockdir])
    try:
        fixture = guard.check_lock_location({"allow_standin_for_testing": allow_standin}, lockdir, root, sets)
    except SealError as exc:
        raise SealError(str(exc).replace("opened only with", "frozen only into")) from None
    return fixture, sets


def refuse_if_opened(cfg: dict, lockdir: Path, root, sets, action: str) -> None:
    """No protocol may be frozen or re-frozen once an opening of the set (or an overlapping one) started."""
    mine = registry.set_of(sets, lockdir)
    looked = led.openings(guard.all_lines(root, sets), guard.belongs_to(mine, sets))
    if looked:
        r = looked[0]
        state = "completed" if r["completed"] else ("NEVER COMPLETED (the sealed judgements were copied; the "
                                                    "look is recorded)")
        raise SealError(f"REFUSED to {action}: {r['source']} records {len(looked)} opening(s) of this sealed "
                        f"set (or one overlapping it), e.g. opening {r['opening']} of protocol "
                        f"{r['protocol_sha256']} started at {(r['started'] or r['completed']).get('time')} "
                        f"(line {r['line']}), {state}. The confirmation set has been looked at: it cannot "
                        "test a new or re-frozen protocol.")
    guard.check_traces(root, cfg, sets, action)


def _labels(fixture: bool, test_only: bool) -> list[str]:
    return ([led.FIXTURE_LABEL] if fixture else []) + ([led.PROTOCOL_LABEL] if test_only else [])


def submit_confirmation_run(cfg: dict, lockdir: Path, run_file) -> str | None:
    """A run-file reranker's blind submission: its run over the confirmation queries' frozen candidates
    (public: only the judgements are sealed), checked like the development run, copied into the lock folder
    before the protocol that pins its sha256 is written. A cross-encoder study takes no run."""
    if cfg["study"]["reranker_kind"] != RUN_FILE:
        if run_file:
            raise SealError(f"REFUSED: --reranker-run {run_file}: study {cfg['study']['name']!r} reranks "
                            "with a cross-encoder (study.reranker_kind), whose confirmation scores are "
                            "inferred at the opening. Drop --reranker-run.")
        return
    if not run_file:
        raise SealError(f"REFUSED: study {cfg['study']['name']!r} reranks with a run file: its run over the "
                        "confirmation queries' candidates must be pinned in the protocol NOW, before any "
                        "opening (queries and candidates are public; only the judgements are sealed).\n  "
                        f"file: {lockdir / layout.RERANKER_CONFIRM_RUN} (to be written)\n  expected: "
                        "--reranker-run FILE\n  found: none\n  fix: python scripts/confirm.py freeze ... "
                        "--reranker-run /path/to/confirm.run")
    submitted = read_once(run_file)  # checked, copied and pinned: these bytes
    reranker_run.checked_run(cfg, lockdir, submitted, "confirmation", "nothing was frozen")
    with atomic_path(lockdir / layout.RERANKER_CONFIRM_RUN) as tmp:
        tmp.write_bytes(submitted.data)
    return sha256_bytes(submitted.data)


def freeze(cfg: dict, lockdir, dev_run, root, allow_standin_for_testing: bool = False, now: str | None = None,
           reranker_run_file=None) -> dict:
    """Freeze the protocol from a finished, audited development run; refuse to overwrite one. A run-file
    reranker (``reranker_run_file``): its confirmation run is pinned into the protocol here
    (``submit_confirmation_run``)."""
    lockdir = Path(lockdir)
    fixture, sets = _location(cfg, lockdir, root, allow_standin_for_testing)
    refuse_if_opened(cfg, lockdir, root, sets, "freeze a protocol")  # first: an opened set is spent
    if (lockdir / loc.PROTOCOL).exists():
        raise SealError(f"{lockdir / loc.PROTOCOL} already exists: a protocol is frozen once. (A code "
                        f"refactor that leaves results identical: {refreeze_command(cfg)}; a new "
                        "preregistration before any opening: move the old files away in a commit that says "
                        "why.)")
    evidence, power = development_evidence(dev_run, cfg, lockdir, root, allow_standin_for_testing)
    test_only = evidence["scorer"] == STANDIN_LABEL
    fcfg = dict(cfg, scorer=STAND_IN if test_only else PINNED)
    submitted = submit_confirmation_run(cfg, lockdir, reranker_run_file)
    protocol = build_protocol(fcfg, lockdir, root, evidence, power, test_only, now or _now())
    pinned = (protocol["model"].get("confirmation_run") or {}).get("sha256")
    if submitted is not None and pinned != submitted:
        raise SealError(f"REFUSED: the copy {lockdir / layout.RERANKER_CONFIRM_RUN} changed while freezing "
                        f"(its sha256 {pinned}, the checked run's {submitted}). Nothing was frozen: "
                        "freeze again.")
    sha = write_protocol(lockdir, protocol)
    led.append_ledger(lockdir, {"event": led.FROZEN, "time": protocol["frozen_at"], "protocol_sha256": sha,
                                "method_sha256": protocol["method"]["sha256"],
                                "development_run": evidence["run"],
                                "development_manifest_sha256": evidence["manifest_sha256"],
                                "sealed_set": registry.set_of(sets, lockdir).key,
                                "code_commit": tree.head_commit(root), "labels": _labels(fixture, test_only)})
    return {"sha256": sha, "protocol": protocol}


def _refreeze_changes(old: dict, current: dict, lockdir: Path) -> list[str]:
    changed = setting_changes(old, current)
    if changed:
        raise SealError("REFUSED: settings or pins changed since freezing (" + ", ".join(changed[:12]) + "). "
                        "A re-freeze only records a code change that leaves every result identical; other "
                        "changes are a new preregistration (move the protocol away in a commit that says "
                        "why, then freeze).")
    files = method_changes(old["method"]["files"], current["method"]["files"])
    if not files:
        raise SealError("REFUSED: nothing to re-freeze: the method is unchanged since "
                        f"{lockdir / loc.PROTOCOL} was frozen.")
    return files


def refreeze(cfg: dict, lockdir, root, reason: str, dev_run, now: str | None = None) -> dict:
    """Record a code change that leaves results identical: only the method may differ from the frozen
    protocol, no opening may have started, and a development run under the current code must reproduce the
    frozen development evidence byte for byte. Writes a new protocol + a ledger line."""
    lockdir = Path(lockdir)
    reason = (reason or "").strip()
    if not reason:
        raise SealError("REFUSED: a re-freeze must say why: --reason \"...\" (it goes into the ledger)")
    sha, old = verified_protocol(lockdir)
    fixture, sets = _location(cfg, lockdir, root, bool(old.get("test_only")))
    refuse_if_opened(cfg, lockdir, root, sets, "re-freeze")
    fcfg = dict(cfg, scorer=old["model"]["scorer"])
    current = frozen_fields(fcfg, lockdir, root)
    files = _refreeze_changes(old, current, lockdir)
    evidence, power = development_evidence(dev_run, fcfg, lockdir, root, bool(old.get("test_only")))
    before = old["development_evidence"]["artefacts_sha256"]
    differ = sorted(k for k in set(before) | set(evidence["artefacts_sha256"])
                    if before.get(k) != evidence["artefacts_sha256"].get(k))
    if differ:
        raise SealError(f"REFUSED: the development run {dev_run} under the changed code ({', '.join(files)}) "
                        f"does not reproduce the frozen development evidence: {', '.join(differ)} differ. "
                        "The change alters results: it is a new method, to be preregistered anew, "
                        "not re-frozen.")
    protocol = {**old, **current, "frozen_at": now or _now(), "power": power,
                "development_evidence": evidence, "refrozen_from": sha, "refreeze_reason": reason}
    new_sha = write_protocol(lockdir, protocol)
    led.append_ledger(lockdir,
                      {"event": led.REFROZEN, "time": protocol["frozen_at"], "protocol_sha256": new_sha,
                                "previous_protocol_sha256": sha, "reason": reason, "changed_files": files,
                                "method_sha256": current["method"]["sha256"],
                                "development_run": evidence["run"],
                                "sealed_set": registry.set_of(sets, lockdir).key,
                       "code_commit": tree.head_commit(root),
                       "labels": _labels(fixture, bool(old.get("test_only")))})
    return {"sha256": new_sha, "protocol": protocol, "changed_files": files}


def register(lockdir, url: str, now: str | None = None) -> str:
    """Record where the frozen protocol's sha256 is registered outside (a ``registered`` ledger line)."""
    url = (url or "").strip()
    if not url:
        raise SealError("REFUSED: register needs --url <where the protocol's sha256 is registered: an OSF or "
                        "AsPredicted address>")
    sha, _protocol = verified_protocol(lockdir)
    led.append_ledger(lockdir, {"event": led.REGISTERED, "time": now or _now(), "protocol_sha256": sha,
                                "where": url})
    return sha
