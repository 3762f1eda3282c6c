"""sha256 fingerprints of the code that computes a result.

``library_sha256`` (the science: ``workflow/rerank_study/*.py``) is a parameter of every computing
rule, so a change in a definition reruns what depends on it. ``method_sha256`` covers everything
that decides a result — the library, the rule scripts, the rules, the Snakefile, the config
schema and the requirements lock — and is frozen into the confirmation protocol.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

METHOD_PARTS = ("workflow/rerank_study/*.py", "workflow/scripts/*.py", "workflow/rules/*.smk", "Snakefile",
                "workflow/schemas/*.yaml", "lockfiles/requirements.lock", "lockfiles/torch.txt")


def files_sha256(root, patterns) -> dict[str, str]:
    """{relative path: sha256} of every file matching the glob patterns under ``root``, sorted."""
    root = Path(root)
    out = {}
    for pattern in patterns:
        for p in sorted(root.glob(pattern)):
            if p.is_file():
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def combined_sha256(named_hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name, digest in sorted(named_hashes.items()):
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()


def library_sha256(root) -> str:
    """The library's source: file name + bytes of every module, in name order."""
    h = hashlib.sha256()
    for p in sorted((Path(root) / "workflow" / "rerank_study").glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def method_sha256(root) -> tuple[str, dict[str, str]]:
    """(combined sha256, per-file sha256) of everything that decides a result."""
    files = files_sha256(root, METHOD_PARTS)
    return combined_sha256(files), files
