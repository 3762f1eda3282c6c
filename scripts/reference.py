#!/usr/bin/env python3
"""Write the committed reference results of a finished, audited run (a maintainer's act).

    .venv/bin/python scripts/reference.py write results/smoke-standin [--name standin-smoke]

writes lockfiles/reference/<name>/ (reference.json with every deterministic artefact's sha256
and the machine facts, logits.tsv, per_query.tsv). Commit it; users then compare their own run
with `snakemake check_reproduction --config ...` (same scorer and smoke setting)."""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow"))

from rerank_study.core import machine, names  # noqa: E402
from rerank_study.core.errors import PipelineError  # noqa: E402
from rerank_study.core.fileio import read_json  # noqa: E402
from rerank_study.repro import reference


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["write"])
    ap.add_argument("rundir", type=Path)
    ap.add_argument("--name", help="reference folder name (default: from the run's scorer and shape)")
    ap.add_argument("--lockdir", type=Path, default=ROOT / "lockfiles")
    args = ap.parse_args(argv)
    try:
        manifest = read_json(args.rundir / "manifest.json")
        scoring = read_json(args.rundir / "measurements" / "scoring.json")
        name = args.name or reference.reference_name(names.STAND_IN
                                                     if manifest["scorer"] == names.STANDIN_LABEL
                                                     else names.PINNED,
                                                     manifest["settings"]["n_queries"] is not None)
        dest = args.lockdir / "reference" / name
        ref = reference.write_reference(args.rundir, dest, machine.facts(), scoring["threads"])
    except PipelineError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"wrote {dest} ({len(ref['artefacts_sha256'])} deterministic artefacts); commit it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
