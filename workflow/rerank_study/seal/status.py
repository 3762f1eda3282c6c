"""What ``confirm.py status`` prints: the protocol, every opening of the lock folder's sealed set in any
ledger (started / completed), freezes, whether each started line has reached a remote, the local traces of a
look that the ledgers do not know, whether the two records kept elsewhere exist (the ledger pushed, the
protocol's sha256 registered outside) and how to make them, and what an opening started now would say (every
check of the opening's guard, run here)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import PipelineError, SealError
from ..core.fileio import input_text
from . import guard, registry, traces, tree
from . import ledger as led
from . import locations as loc


def _protocol_line(lockdir: Path, root) -> str:
    p = lockdir / loc.PROTOCOL
    if not p.exists():
        return f"no protocol frozen ({p} absent); the confirmation set is sealed"
    sha = input_text(lockdir / loc.PROTOCOL_SHA).split()[0] if (lockdir / loc.PROTOCOL_SHA).exists() \
        else "(no sha file)"
    return f"protocol {p} sha256 {sha}" + (" (TEST FIXTURE lock folder)" if loc.is_test_fixture(lockdir, root)
                                           else "")


def _freezes(lines) -> list[str]:
    out = []
    for ln in lines:
        e = ln.entry
        if ln.event in (led.FROZEN, led.REFROZEN):
            extra = (f" from {str(e.get('previous_protocol_sha256'))[:12]}: {e.get('reason')}"
                     if ln.event == led.REFROZEN else "")
            out.append(f"  {ln.event} {str(e.get('protocol_sha256'))[:12]} at {e.get('time')} ({ln.source} "
                       f"line {ln.number}){extra}")
    return out


def _remote_lines(root, sets) -> list[dict]:
    """Started lines found in the ledgers of remote-tracking branches."""
    if not tree.is_repo(root):
        return []
    refs = tree.git(root, "for-each-ref", "--format=%(refname)", "refs/remotes").stdout.split()
    out = []
    for s in sets:
        rel = f"{loc.relative(s.lockdir, root)}/{loc.LEDGER}"
        for ref in refs:
            shown = tree.git(root, "show", f"{ref}:{rel}")
            if shown.returncode == 0:
                out += [e for _, e in led.parse(shown.stdout, f"{ref}:{rel}")
                        if led.event_of(e) == led.STARTED]
    return out


def _opening_lines(rows, remote) -> list[str]:
    out = []
    for r in rows:
        s, c = r["started"] or {}, r["completed"]
        head = (f"  opening {r['opening']} of {str(r['protocol_sha256'])[:12]} ({r['run']}), {r['source']} "
                f"line {r['line']}")
        if c:
            pr = c.get("primary", {})
            out.append(f"{head}: started {s.get('time', '?')}, completed {c.get('time')}: primary mean "
                       f"{pr.get('mean')}, reaches threshold {pr.get('reaches_threshold')}"
                       + (f", reproduced byte-identical {c['reproduced_byte_identical']}"
                          if "reproduced_byte_identical" in c else "") + ", labels "
                       f"{c.get('labels') or 'none'}")
        else:
            out.append(f"{head}: STARTED {s.get('time')} and NOT COMPLETED (the sealed judgements were "
                       "copied; this look is recorded and counts)")
        if s and not r["labels"] and not any(led.same_opening(s, e) for e in remote):
            out.append("    WARNING: this started line is on no remote-tracking branch yet: commit and push "
                       "the ledger now (git add lockfiles && git commit && git push), and tag it")
    return out


def _registered_line(lockdir: Path, sha: str) -> str:
    lines = [e for e in led.read_ledger(lockdir) if e.get("event") == led.REGISTERED
             and e.get("protocol_sha256") == sha]
    if lines:
        return f"registered outside: yes, {lines[-1].get('where')} ({lines[-1].get('time')})"
    return (f"registered outside: NO. Register the protocol's sha256 where you cannot change it: upload "
            f"{lockdir / loc.PREREG} (it carries the sha256) to OSF (https://osf.io/registries) or "
            "AsPredicted (https://aspredicted.org), then record where: python scripts/confirm.py register "
            "--url <its address>")


def _pushed_line(lockdir: Path, root) -> str:
    """Whether a remote-tracking branch holds the ledger exactly as it is now."""
    rel = f"{loc.relative(lockdir, root)}/{loc.LEDGER}"
    here = (Path(root) / rel).read_bytes() if (Path(root) / rel).is_file() else b""
    refs = tree.git(root, "for-each-ref", "--format=%(refname:short)", "refs/remotes").stdout.split() \
        if tree.is_repo(root) else []
    held = [r for r in refs if tree.git(root, "show", f"{r}:{rel}", text=False).stdout == here]
    if held:
        return f"ledger pushed: yes, {held[0]} holds {rel} as it is now"
    return (f"ledger pushed: NO ({'no remote' if not refs else 'no remote branch holds it as it is now'}). "
            f"Push it where you cannot rewrite it: git add {rel} && git commit && git push (a protected "
            "branch or a tag)")


def _opening_now(cfg: dict, lockdir: Path, root, sha: str) -> tuple[str, bool]:
    """What an opening started now would say: every check of the opening's guard."""
    from .guard import check_unseal

    try:
        plan = check_unseal(dict(cfg, unseal=sha), lockdir, root)
    except PipelineError as exc:
        return f"an opening now would be REFUSED:\n{exc}", False
    return (f"an opening now would pass every check: opening {plan['opening']} as {plan['run']}"
            + (f" (labels {plan['labels']})" if plan["labels"] else ""), True)


def describe(lockdir, root, cfg: dict) -> tuple[str, bool]:
    """The status text, and whether an opening now would pass (True when no protocol is frozen)."""
    lockdir = Path(lockdir)
    out = [_protocol_line(lockdir, root)]
    try:
        sets = registry.build(root, [lockdir])
        mine = registry.set_of(sets, lockdir)
    except SealError as exc:
        return "\n".join(out + [f"the seal registry cannot be read: {exc}"]), False
    out += _freezes(guard.current_lines([mine]))
    rows = led.openings(guard.all_lines(root, sets), guard.belongs_to(mine, sets))
    unfinished = [r for r in rows if not r["completed"]]
    out.append(f"sealed set {mine.key[:12]} ({mine.file} of {mine.dataset}); openings recorded in any "
               f"ledger: {len(rows)} ({len(rows) - len(unfinished)} completed, {len(unfinished)} started but "
               "not completed)")
    out += _opening_lines(rows, _remote_lines(root, sets))
    problems = traces.trace_problems(root, sets, guard.current_lines(sets),
                                     caches=[Path(cfg["resources"]) / "cache" / "sealed"],
                                     results=[cfg["results"]])
    out += [f"WARNING: {p}" for p in problems]
    if not (lockdir / loc.PROTOCOL_SHA).is_file():
        if rows or problems:  # no protocol here, but the set was looked at: it is not sealed any more
            out[0] = (f"no protocol frozen ({lockdir / loc.PROTOCOL} absent), but the sealed set has "
                      f"{len(rows)} recorded opening(s){' and ' if rows and problems else ''}"
                      f"{f'{len(problems)} unrecorded trace(s)' if problems else ''}: it is spent, and no "
                      "protocol can be frozen on it")
            return "\n".join(out), False
        return "\n".join(out), True
    sha = input_text(lockdir / loc.PROTOCOL_SHA).split()[0]
    out += [_registered_line(lockdir, sha), _pushed_line(lockdir, root)]
    now, ok = _opening_now(cfg, lockdir, root, sha)
    return "\n".join(out + [now]), ok
