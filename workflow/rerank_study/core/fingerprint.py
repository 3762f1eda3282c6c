"""sha256 of the library's source: a parameter of every computing rule, so a change in a definition reruns
what depends on it (Snakemake tracks only the rule scripts themselves). The method a confirmation protocol
freezes - every file that can run - is ``seal.method``."""

from __future__ import annotations

import hashlib
from pathlib import Path


def library_sha256(root) -> str:
    """Relative path + bytes of every module of the library (``workflow/rerank_study/**/*.py``), in path
    order."""
    lib = Path(root) / "workflow" / "rerank_study"
    h = hashlib.sha256()
    for p in sorted(p for p in lib.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(p.relative_to(lib).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()
