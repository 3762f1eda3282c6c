"""The re-inference child as the kernel runs it (check 'reinfer'): the process the audit started must be the
interpreter it was given (``--reinfer-python``, resolved), running THIS folder's ``reinfer.py`` with the
audit's own arguments - read back from ``/proc/<pid>/exe`` and ``/proc/<pid>/cmdline`` (Linux), never taken
from the child's own account. A wrapper script, or an interpreter that runs another script, is refused: the
child is the half of the check that re-infers the logits and makes the derived file again. Its environment is
built from an allowlist (``child_env``), never the audit's whole environment.

What no check here can hold: a process environment that the caller controls around the audit itself (an
LD_PRELOAD on the audit, an interpreter given as --reinfer-python whose own site runs other code), an edited
audit, or an audit.json written by hand. The audit answers for runs made and audited by this checkout's code
under the locked environment; who can write the results folder or the environment owns the audit."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

# the only variables of the audit's environment the child inherits (beside the audit's own settings): no
# LD_PRELOAD, no PYTHON*, nothing else that would change which code the interpreter runs
INHERITED = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def child_env(environ, own: dict) -> dict:
    """The child's whole environment: ``INHERITED`` from ``environ`` (when set), then the audit's own
    settings ``own`` (the numeric mode, offline switches)."""
    return {**{k: environ[k] for k in INHERITED if k in environ}, **own}


def started_as(pid: int, python, argv: list[str]) -> str | None:
    """Why the running process ``pid`` is not ``python`` (symlinks resolved) running ``argv``; None when it
    is."""
    try:
        cmdline = _cmdline(pid)
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError as exc:
        return f"cannot read the child's /proc/{pid} ({exc}): which program re-infers cannot be checked"
    want = os.path.realpath(str(python))
    if exe != want:
        return (f"the child process runs {exe}, not the interpreter {want}: --reinfer-python must be a "
                "python interpreter itself, not a wrapper")
    if cmdline[1:] != argv[1:]:
        return f"the child process runs {cmdline[1:]}, not {argv[1:]}"
    return None


def _cmdline(pid: int, seconds: float = 10.0) -> list[str]:
    """The process's arguments once the kernel has set them up (an exec in progress shows none yet)."""
    end = time.monotonic() + seconds
    while True:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        if raw or time.monotonic() > end:
            return [c.decode() for c in raw.split(b"\0")[:-1]]
        time.sleep(0.005)


def script_sha256(path) -> str:
    """The sha256 of the child's script as the audit started it (recorded in info.reinfer)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
