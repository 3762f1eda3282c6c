"""What ``confirm.py status`` prints: the protocol, every opening of the lock folder's sealed set in any
ledger (started / completed), freezes, whether each started line has reached a remote, and the local traces
of a look that the ledgers do not know."""

from __future__ import annotations

from pathlib import Path

from ..errors import SealError
from ..fileio import input_text
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


def describe(lockdir, root, cfg: dict) -> str:
    lockdir = Path(lockdir)
    out = [_protocol_line(lockdir, root)]
    try:
        sets = registry.build(root, [lockdir])
        mine = registry.set_of(sets, lockdir)
    except SealError as exc:
        return "\n".join(out + [f"the seal registry cannot be read: {exc}"])
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
    return "\n".join(out)
