#!/usr/bin/env python3
"""Create or update the project's virtual environment from the lockfiles (standard library only).

    python3.11 scripts/setup_env.py            # set up .venv (idempotent; skips when the locks are unchanged)
    python3.11 scripts/setup_env.py --test     # ... plus the developer tools, then run the test suite
                                               #     (the README's test command; the tests run ruff)
    python3.11 scripts/setup_env.py --dev      # ... plus the developer tools (ruff, mutation testing)

Steps: python -m venv .venv; pip install torch==2.13.0 (lockfiles/torch.txt; with its own
requirements, which on a CUDA build include the nvidia libraries it needs);
pip install --no-deps --require-hashes -r lockfiles/requirements.lock; pip install --no-deps -e .;
pip check. A stamp (.venv/.lock-sha256) records the sha256 of the lockfiles installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
LOCKS = [ROOT / "lockfiles" / "torch.txt", ROOT / "lockfiles" / "requirements.lock", ROOT / "pyproject.toml"]


def run(cmd):
    """Run one step, then print its wall seconds (where a fresh machine's time to a first result goes)."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    t0 = time.perf_counter()
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT)
    print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)


def lock_digest() -> str:
    h = hashlib.sha256()
    for p in LOCKS:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


XDIST = ("-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder")  # files in collection order (conftest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test", action="store_true", help="run the test suite after setting up")
    ap.add_argument("--dev", action="store_true",
                    help="also install the hash-locked developer tools (lockfiles/requirements-dev.lock: "
                         "ruff, mutmut)")
    ap.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (with --test)")
    args = ap.parse_args()
    if sys.version_info[:2] != (3, 11):
        sys.exit(f"Python 3.11 is required (the lock is for 3.11); this is {sys.version.split()[0]}. "
                 "Run it as: python3.11 scripts/setup_env.py")
    py = VENV / "bin" / "python"
    stamp = VENV / ".lock-sha256"
    digest = lock_digest()
    if not (py.exists() and stamp.exists() and stamp.read_text().strip() == digest):
        if not py.exists():
            run([sys.executable, "-m", "venv", VENV])
        pip = [py, "-m", "pip", "--disable-pip-version-check"]
        torch_line = [l for l in (ROOT / "lockfiles/torch.txt").read_text().splitlines()
                      if l.strip() and not l.startswith("#")]
        run(pip + ["install"] + torch_line)
        run(pip + ["install", "--no-deps", "--require-hashes", "-r", ROOT / "lockfiles/requirements.lock"])
        run(pip + ["install", "--no-deps", "--no-build-isolation", "-e", ROOT])
        run(pip + ["check"])
        stamp.write_text(digest + "\n")
    else:
        print(f"{VENV} is up to date with the lockfiles ({digest[:12]})", flush=True)
    if args.dev or args.test:  # the tests run ruff; the environment check accepts exactly these pinned tools
        run([py, "-m", "pip", "--disable-pip-version-check", "install", "--no-deps", "--require-hashes", "-r",
             ROOT / "lockfiles/requirements-dev.lock"])
        run([py, "-m", "pip", "--disable-pip-version-check", "check"])
    if args.test:
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.chdir(ROOT)
        # pytest-xdist: one worker per core; a test file runs whole on one worker (its module fixtures built
        # once); the shared fixture runs are built once per test run (tests/conftest.py shared_world)
        os.execve(str(py), [str(py), "-m", "pytest", *XDIST, *args.pytest_args], env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
