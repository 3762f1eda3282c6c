"""The audit as the README runs it (python -I -S scripts/audit RUN --lockdir ... --configfile ...) on copies
of the fixture's finished runs (tests/conftest.py: copy_of), and the edits the corruption tests make to
them."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from conftest import AUDIT, DATA


def run_audit(rundir: Path, lockdir: Path):
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir), "--lockdir",
                           # what the fixture runs were given
                           str(lockdir), "--configfile", str(DATA / "fixture_config.yaml"),
                           "--out", str(rundir.parent / f"{rundir.name}-audit.json")], capture_output=True,
                          text=True)
    result = json.loads((rundir.parent / f"{rundir.name}-audit.json").read_text()) if proc.returncode in \
        (0, 1) else None
    return proc, result


def rehash_manifest(rundir: Path):
    """What a careless editor would do: make the manifest agree with the files."""
    m = json.loads((rundir / "manifest.json").read_text())
    for a in m["artefacts"]:
        p = Path(a["path"])
        p = p if p.is_absolute() else rundir / p
        if a["scope"] == "run":
            a["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (rundir / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def write_rows(path, rows, header=None):
    header = header or list(rows[0])
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("\t".join(header) + "\n")
        for r in rows:
            fh.write("\t".join(r[h] for h in header) + "\n")
