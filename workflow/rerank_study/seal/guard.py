"""The guards: before any development job (the development side holds no sealed data) and before an opening
(``check_unseal``: the only gate to the sealed judgements, run while the workflow is parsed, before any job).

``check_unseal`` refuses when the token is missing or wrong; a ``repin`` is asked for; the lock folder is not
one of the repository's own (or a test fixture that overlaps no real sealed set); the protocol, a pin, a
setting or a method file changed since freezing; the scorer is the STAND-IN; a method file is not committed
(git status, untracked files included); a locked library is at another version; the protocol or ledger is not
committed or the ledger's history is not append-only; any ledger shows the sealed set (or one overlapping it)
started under another protocol; or a local trace of a look is not in the ledgers. TEST SUITE ONLY:
``allow_standin_for_testing`` / ``allow_dirty_for_testing`` are refused unless the lock folder is a test
fixture; everything opened with one is labelled TEST-ONLY.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import SealError
from ..core.fileio import input_bytes
from ..core.names import PINNED
from . import environment, registry, traces, tree
from . import ledger as led
from . import locations as loc
from .method import method_changes  # noqa: F401  (re-exported for callers that name the method's diff)
from .protocol import check_frozen, refreeze_command, unseal_command, verified_protocol

TEST_SWITCHES = ("allow_standin_for_testing", "allow_dirty_for_testing")


def current_lines(sets) -> list[led.Line]:
    """Every line of every registered lock folder's ledger on disk."""
    out = []
    for s in sets:
        out += led.lines_of(str(Path(s.lockdir) / loc.LEDGER), led.ledger_lines(s.lockdir), s.key)
    return out


def all_lines(root, sets) -> list[led.Line]:
    """Every ledger line that counts: the registry's ledgers on disk, every version of every ledger in the git
    history of every ref, and the local trace files."""
    return current_lines(sets) + traces.history_lines(root) + traces.trace_lines(root,
                                                                                 [s.lockdir for s in sets])


def belongs_to(mine: registry.SealedSet, sets):
    """Whether a ledger line records an opening of this sealed set or of one that overlaps it."""
    keys = {s.key for s in sets if s.overlaps(mine)} | {mine.key}
    return lambda ln: ln.set_key in keys or mine.recorded_in(ln.entry)


def check_lock_location(cfg: dict, lockdir, root, sets) -> bool:
    """Refuse test switches outside a test fixture, a lock folder that is not the repository's own, and a
    fixture whose sealed set overlaps a repository sealed set. Return whether it is a test fixture."""
    lockdir, root = Path(lockdir), Path(root)
    fixture = loc.is_test_fixture(lockdir, root)
    switches = [k for k in TEST_SWITCHES if cfg.get(k)]
    if switches and not fixture:
        raise SealError(f"REFUSED: {', '.join(switches)} is for the TEST SUITE's fixture lock folder only (a "
                        f"folder holding a {loc.TEST_FIXTURE} file, never the repository's "
                        f"{loc.REPO_LOCKDIR}/); {lockdir} is not one. A test switch must never let a look at "
                        "the real sealed judgements through: drop it.")
    if not fixture and not loc.is_repository_lockdir(lockdir, root):
        raise SealError("REFUSED: the confirmation is opened only with one of the repository's own tracked "
                        f"lock folders ({loc.repository_lockdir(root)}, or "
                        f"{root / loc.STUDY_LOCKDIRS}/<study> for another study); lockdir={lockdir} is "
                        "another folder (a protocol and ledger there would leave no trace in the "
                        "repository). Drop the lockdir override.")
    if fixture:
        mine = registry.set_of(sets, lockdir)
        for s in sets:
            if loc.is_repository_lockdir(s.lockdir, root) and s.overlaps(mine):
                raise SealError(f"REFUSED: the test-fixture lock folder {lockdir} seals judgements that "
                                f"overlap the REAL sealed set of {s.lockdir} ({s.file}: the same content, a "
                                "sealed query id of the same corpus, or a sealed query's text). A test "
                                "opening must use a sealed file of its own.")
    return fixture


def labels_for(cfg: dict, protocol: dict, fixture: bool) -> list[str]:
    labels = [led.FIXTURE_LABEL] if fixture else []
    if protocol.get("test_only"):
        if not fixture:
            raise SealError("REFUSED: the frozen protocol is TEST-ONLY (frozen from a STAND-IN run) and this "
                            "is the repository's lock folder: it cannot open the real confirmation set. "
                            "Freeze a protocol from a development run with the pinned model.")
        labels.append(led.PROTOCOL_LABEL)
    if cfg["scorer"] != PINNED:
        if not cfg.get("allow_standin_for_testing"):
            raise SealError("REFUSED: the confirmation cannot be run with the STAND-IN scorer (its scores "
                            "mean nothing). Supply the pinned cross-encoder (--config model_dir=...) and use "
                            "scorer=pinned.")
        labels.append(led.STANDIN_RUN_LABEL)
    return labels


def ledger_history_problems(root, rel: str, since: str | None = None) -> list[str]:
    """Every committed version of the ledger (``since``: only that commit's) must be a prefix of the current
    one (append-only)."""
    current = input_bytes(Path(root) / rel) if (Path(root) / rel).exists() else b""
    problems = []
    commits = [since] if since else tree.git(root, "log", "--format=%H", "--", rel).stdout.split()
    for commit in commits:
        old = tree.git(root, "show", f"{commit}:{rel}", text=False)
        if old.returncode == 0 and not current.startswith(old.stdout):
            problems.append(f"commit {commit[:12]} holds {len(old.stdout.splitlines())} ledger lines that "
                            f"the current {rel} does not begin with")
    return problems


def _committed_records(lockdir: Path, root) -> None:
    lock_rel = loc.relative(lockdir, root)
    missing = [f"{lock_rel}/{n}" for n in (loc.PROTOCOL, loc.PROTOCOL_SHA, loc.LEDGER)
               if not tree.in_head(root, f"{lock_rel}/{n}")]
    if missing:
        raise SealError(f"REFUSED: {', '.join(missing)} not committed. The protocol and the ledger must be "
                        "committed (git add lockfiles && git commit) before the confirmation is opened.")
    history = ledger_history_problems(root, f"{lock_rel}/{loc.LEDGER}")
    if history:
        raise SealError(f"REFUSED: the ledger {lock_rel}/{loc.LEDGER} was rewritten: "
                        + "; ".join(history[:3])
                        + ". It is append-only: restore every recorded line from git.")


def dirty_fix(dirty: list[str], lockdir, root, cfg: dict) -> str:
    """A fix that works for these files: the lock folder (the seal's records, a run-file reranker's frozen
    run, pins) and config/ are committed (a setting is then compared with the frozen one), a ledger with lines
    removed is restored; another method file is restored, or - when the change is meant - committed and
    re-frozen before any opening."""
    lock_rel = loc.relative(lockdir, root)
    paths = [d.split(" (")[0] for d in dirty]
    ledger = f"{lock_rel}/{loc.LEDGER}"
    cut = ledger in paths and bool(ledger_history_problems(root, ledger, since="HEAD"))
    records = [p for p in paths if p.startswith(f"{lock_rel}/") and not (cut and p == ledger)]
    settings = [p for p in paths if p.split("/")[0] in loc.SETTINGS_PATHS]
    code = [p for p in paths if p not in records and p not in settings and not (cut and p == ledger)]
    out = []
    if cut:
        out.append(f"restore the ledger's committed lines (git checkout HEAD -- {ledger}): it is append-only "
                   "and lost lines since its last commit")
    if records or settings:
        out.append(f"commit {' '.join(records + settings)} (git add <these> && git commit; a committed "
                   "setting is then compared with the frozen one, config/README.md lists the keys that "
                   "cannot change a result)")
    if code:
        out.append(f"restore {' '.join(code[:5])} to the committed method (a changed file: git restore "
                   f"<path>; an untracked one: move it out of {', '.join(loc.METHOD_PATHS)}); a change that "
                   "is meant is a change of method: commit it, rerun the development analysis and re-freeze "
                   f"before any opening ({refreeze_command(cfg)}; a change that alters the development "
                   "results is a new preregistration)")
    return "; ".join(out)


def another_studys(rel: str, lockdir, root, cfg: dict) -> bool:
    """A file of another study (its lock folder, its study file) or of a family of studies (its own records):
    no part of this opening's method."""
    path = (Path(root) / rel).resolve()
    if rel.startswith(loc.FAMILY_LOCKDIRS + "/"):
        return True
    if rel.startswith(loc.STUDY_LOCKDIRS + "/"):
        return not path.is_relative_to(Path(lockdir).resolve())
    if rel.startswith("config/studies/"):
        return path != Path(cfg.get("study_file") or "/").resolve()
    return False


def check_tree(cfg: dict, lockdir: Path, root, fixture: bool, labels: list[str]) -> tree.TreeState:
    """The method's files equal HEAD (git status, untracked files included; other studies' files aside); for
    the repository's lock folders: protocol and ledger committed, the ledger's history append-only."""
    state = tree.tree_state(root)
    state.dirty = [d for d in state.dirty if not another_studys(d.split(" (")[0], lockdir, root, cfg)]
    if not state.is_repo or state.dirty:
        if not cfg.get("allow_dirty_for_testing"):
            what = ("is not a git checkout with a commit" if not state.is_repo else
                    "has method files that differ from its last commit: " + ", ".join(state.dirty[:12])
                    + (f" and {len(state.dirty) - 12} more" if len(state.dirty) > 12 else ""))
            fix = ("clone the repository and open from the clone" if not state.is_repo
                   else dirty_fix(state.dirty, lockdir, root, cfg))
            raise SealError(f"REFUSED: the working tree {what}. The opening must be traceable to a commit. "
                            f"Fix: {fix}. Never discard lockfiles/ (its ledger records every look). For the "
                            "TEST SUITE's fixture lock folder ONLY: --config allow_dirty_for_testing=true "
                            "(labelled in the report and the ledger).")
        labels.append(led.DIRTY_LABEL)
    if not fixture:
        _committed_records(lockdir, root)
    return state


def check_environment(root) -> None:
    problems = environment.environment_problems(root)
    if problems:
        raise SealError("REFUSED: the installed libraries are not the lock's (a library version can change a "
                        "result):\n  - " + "\n  - ".join(problems[:20])
                        + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
                        + "\nFix: recreate the environment from the lockfiles: rm -rf .venv && python3.11 "
                          "scripts/setup_env.py, then start the opening with .venv/bin/snakemake.")


def check_openings(mine: registry.SealedSet, sets, sha: str, lines) -> list[dict]:
    """Openings of this sealed set across every ledger and its history; refuse one of it, or of an overlapping
    set, under another protocol. Return those under this protocol."""
    rows = led.openings(lines, belongs_to(mine, sets))
    other = [r for r in rows if r["protocol_sha256"] != sha]
    if other:
        r = other[0]
        raise SealError(f"REFUSED: {r['source']} line {r['line']} records opening {r['opening']} of this "
                        "sealed set (or one overlapping it) under a different protocol "
                        f"({r['protocol_sha256']}). The confirmation set has been looked at; it cannot test "
                        "a re-tuned protocol.")
    return rows


def check_traces(root, cfg: dict, sets, action: str) -> None:
    problems = traces.trace_problems(root, sets, current_lines(sets),
                                     caches=[Path(cfg["resources"]) / "cache" / "sealed"],
                                     results=[cfg["results"]])
    if problems:
        raise SealError(f"REFUSED to {action}: a look left traces that the ledgers do not know:\n  - "
                        + "\n  - ".join(problems[:10]) + "\nThe ledger records every look: "
                        "restore it as said.")


def check_development(cfg: dict, lockdir, root, data_dir=None, user_runs=None, action: str = "run",
                      own_pending: bool = False) -> None:
    """The parse-time (and job-time) guard of every development invocation: its development side holds no
    judgement, query id or query text of any sealed set of the registry. ``own_pending``: this invocation
    re-pins the lock folder's own sealed set record (repin=splits), whose job checks its new record."""
    if not (Path(lockdir) / loc.DATA_PINS).is_file():
        return  # nothing pinned yet (repin=data): freeze_data checks the pins it is about to write
    sets = registry.build(root, [] if own_pending else [lockdir], skip=lockdir if own_pending else None)
    from ..settings.config import repin_set

    side = registry.development_side(lockdir, data_dir, user_runs, repinning=repin_set(cfg))
    registry.check_development_side(side, sets, action)


def pushed(root, commit: str | None) -> dict:
    """Whether ``commit`` is on a remote-tracking branch (the started line records it; status warns until the
    ledger line itself is pushed)."""
    if not commit:
        return {"code_commit_on_a_remote": False, "remotes": []}
    refs = tree.git(root, "branch", "-r", "--contains", commit).stdout.split()
    return {"code_commit_on_a_remote": bool(refs), "remotes": refs[:5]}


def start_entry(u: dict, cfg: dict, lockdir, root, mine: registry.SealedSet) -> dict:
    """The 'started' ledger line of an opening, without its time (added when it is written)."""
    from ..core.fileio import read_json

    pins = read_json(Path(lockdir) / loc.DATA_PINS)
    sealed = pins["files"][mine.file]
    return {"event": led.STARTED, "protocol_sha256": u["sha256"], "opening": u["opening"], "run": u["run"],
            "labels": u["labels"], "code_commit": u["git"]["commit"],
            "code_uncommitted_paths": u["git"]["dirty"], "method_sha256": u["method_sha256"],
            **mine.identity(), "sealed_file": mine.file, "sealed_sha256": sealed["sha256"],
            "sealed_content_sha256": sealed.get("content_sha256"), "lockdir": loc.relative(lockdir, root),
            "data_url": pins.get("zip", {}).get("url"), "pushed": pushed(root, u["git"]["commit"]),
            "data_source": {"data_mirror": cfg.get("data_mirror", ""), "data_zip": cfg.get("data_zip", ""),
                            "url": cfg["data"]["url"]},
            "environment": environment.environment_record(root)}


def _opening_plan(cfg, lockdir, root, sha, protocol, fixture, sets) -> dict:
    labels = labels_for(cfg, protocol, fixture)
    method = check_frozen(cfg, lockdir, root, protocol)
    state = check_tree(cfg, lockdir, root, fixture, labels)
    check_environment(root)
    lines = all_lines(root, sets)
    mine = registry.set_of(sets, lockdir)
    if not any(ln.event in (led.FROZEN, led.REFROZEN) and ln.entry.get("protocol_sha256") == sha
               for ln in current_lines([mine])):
        raise SealError(f"REFUSED: {Path(lockdir) / loc.LEDGER} does not record the freezing of protocol "
                        f"{sha} (scripts/confirm.py freeze writes both). Restore the ledger from git.")
    rows = check_openings(mine, sets, sha, lines)
    check_traces(root, cfg, sets, "open the confirmation")
    opening, labelled = led.next_opening(rows), bool(labels)
    return {"sha256": sha, "protocol": protocol, "opening": opening,
            "run": led.opening_run_name(sha, opening, labelled),
            "previous": [r["completed"] for r in rows if r["completed"]],
            "unfinished": [{"opening": r["opening"], "run": r["run"], "line": r["line"],
                            "source": r["source"], "time": r["started"].get("time")} for r in rows
                           if r["started"] and not r["completed"]],
            "git": {"commit": state.commit, "dirty": state.dirty}, "labels": labels, "test_fixture": fixture,
            "method_sha256": method, "sealed_set": mine}


def check_unseal(cfg: dict, lockdir, root) -> dict:
    """Run every guard; return {"sha256", "protocol", "opening", "run", "previous", "unfinished", "git",
    "labels", "test_fixture", "method_sha256", "start"} or raise SealError."""
    lockdir = Path(lockdir)
    if str(cfg.get("repin") or "").strip():
        raise SealError(f"REFUSED: repin={cfg['repin']} in confirmation mode. The confirmation is analysed "
                        "with the pins frozen in the protocol; re-pinning is a separate, committed act "
                        "before freezing. Drop repin.")
    token = str(cfg.get("unseal") or "").strip()
    if not token:
        raise SealError("THE CONFIRMATION IS SEALED: no unseal token. Unseal with: "
                        f"{unseal_command(cfg, lockdir)}")
    sets = registry.build(root, [lockdir])
    fixture = check_lock_location(cfg, lockdir, root, sets)
    sha, protocol = verified_protocol(lockdir, token, cfg)
    plan = _opening_plan(cfg, lockdir, root, sha, protocol, fixture, sets)
    mine = plan.pop("sealed_set")
    plan["start"] = start_entry(plan, cfg, lockdir, root, mine)
    return plan
