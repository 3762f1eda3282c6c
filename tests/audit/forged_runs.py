"""Helpers of the anchor tests (test_audit_reference.py, test_audit_reinfer.py): a copy of a fixture run with
a lock folder of its own (where a test may commit a hand-made reference), the audit run on it as the DAG runs
it, and a logit forged in pairs.tsv TOGETHER with the run's own verification record, rankings.tsv and the
manifest's hashes (what a forger who knows the pipeline's verification sample would do)."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import AUDIT, DATA

FIXTURE_CONFIG = DATA / "fixture_config.yaml"


def copy_run(src: Path, workdir: Path, base: Path) -> tuple[Path, Path]:
    """(run folder, lock folder): a copy of the run ``src`` of the fixture work folder ``workdir`` under
    ``base``, with a COPY of the lock folder (the run names ../../lockfiles) and the resources linked."""
    (base / "results").mkdir(parents=True)
    (base / "resources").symlink_to(workdir / "resources")
    shutil.copytree(workdir / "lockfiles", base / "lockfiles")
    dst = base / "results" / src.name
    shutil.copytree(src, dst)
    return dst, base / "lockfiles"


def model_dir(workdir: Path) -> Path:
    """The stand-in's model folder the fixture DAG built (resources/models/standin-seed<seed>/)."""
    (found,) = sorted((workdir / "resources" / "models").glob("standin-*/MODEL.json"))
    return found.parent


def run_audit(rundir: Path, lockdir: Path, *extra: str):
    """The audit as the DAG's rule runs it (python -I -S -B, the fixture's config file as the anchor's);
    returns (process, audit.json or None)."""
    out = rundir.parent / f"{rundir.name}-audit.json"
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir), "--lockdir",
                           str(lockdir), "--configfile", str(FIXTURE_CONFIG), "--out", str(out), *extra],
                          capture_output=True, text=True)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def read_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def write_rows(path: Path, rows: list[dict]) -> None:
    header = list(rows[0])
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("\t".join(header) + "\n")
        for r in rows:
            fh.write("\t".join(r[h] for h in header) + "\n")


def rehash_manifest(rundir: Path) -> None:
    m = json.loads((rundir / "manifest.json").read_text())
    for a in m["artefacts"]:
        if a["scope"] == "run":
            a["sha256"] = hashlib.sha256((rundir / a["path"]).read_bytes()).hexdigest()
    (rundir / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")


def forge_logit(rundir: Path, qid: str, doc_id: str, new: str) -> str:
    """Write ``new`` as the logit of (qid, doc_id) in pairs.tsv, the verification record (logit and
    re-inferred logit, when the pair is in its sample) and rankings.tsv; rehash the manifest. Returns the
    honest text."""
    rows = read_rows(rundir / "pairs.tsv")
    (row,) = [r for r in rows if (r["qid"], r["doc_id"]) == (qid, doc_id)]
    honest, row["logit"] = row["logit"], new
    write_rows(rundir / "pairs.tsv", rows)
    rec = json.loads((rundir / "verification.json").read_text())
    for p in rec["pairs"]:
        if (p["qid"], p["doc_id"]) == (qid, doc_id):
            p["logit"] = p["reinferred_logit"] = new
    (rundir / "verification.json").write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    ranks = read_rows(rundir / "rankings.tsv")
    for r in ranks:
        if (r["qid"], r["doc_id"]) == (qid, doc_id):
            r["logit"] = new
    write_rows(rundir / "rankings.tsv", ranks)
    rehash_manifest(rundir)
    return honest


def failures(result: dict, check: str) -> list[dict]:
    return result["checks"][check]["first_failures"]
