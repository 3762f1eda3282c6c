#!/usr/bin/env python3
"""Freeze the confirmation protocol, or show the seal's state.

    python scripts/confirm.py freeze --dev-run results/dev      # once, before any confirmation data is read
    python scripts/confirm.py status                            # protocol sha256, openings in the ledger

Then open the sealed confirmation (the only path that reads the confirmation judgements):

    snakemake confirm --cores 4 --config unseal=<sha256 printed by freeze>

freeze writes lockfiles/protocol.json, lockfiles/protocol.sha256 and lockfiles/PREREGISTRATION.md
(commit them); it reads the development run's summary.json for the grouped variance behind the
minimum detectable effect and refuses a STAND-IN development run (test suite: --allow-standin-for-testing).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow"))

from rerank_study import protocol  # noqa: E402
from rerank_study.config import deep_update, load_config  # noqa: E402
from rerank_study.errors import PipelineError  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["freeze", "status"])
    ap.add_argument("--dev-run", type=Path, help="the development run folder whose summary.json sizes the confirmation")
    ap.add_argument("--configfile", type=Path, action="append", default=[],
                    help="extra config files, as given to snakemake (applied in order)")
    ap.add_argument("--lockdir", type=Path, default=None, help="lockfile folder (default: the config's)")
    ap.add_argument("--allow-standin-for-testing", action="store_true",
                    help="TEST SUITE ONLY: freeze from a STAND-IN development run (the protocol says test_only)")
    args = ap.parse_args(argv)
    import yaml

    overrides = {}
    for f in args.configfile:
        overrides = deep_update(overrides, yaml.safe_load(f.read_text()))
    if args.lockdir:
        overrides["lockdir"] = str(args.lockdir)
    cfg = load_config(ROOT / "config" / "config.yaml", overrides)
    lockdir = Path(cfg["lockdir"])
    lockdir = lockdir if lockdir.is_absolute() else ROOT / lockdir
    try:
        if args.command == "freeze":
            if not args.dev_run:
                ap.error("freeze needs --dev-run (the development run folder)")
            out = protocol.freeze(cfg, lockdir, args.dev_run / "summary.json", args.allow_standin_for_testing)
            pw = out["protocol"]["power"]
            print(f"FROZEN {lockdir / protocol.PROTOCOL}\nsha256 {out['sha256']}\n"
                  f"MDE of the {pw['n_confirmation']}-query confirmation set: {pw['mde_confirmation']:.6f}\n"
                  f"commit lockfiles/, then: snakemake confirm --cores 4 --config unseal={out['sha256']}")
        else:
            p = lockdir / protocol.PROTOCOL
            if not p.exists():
                print(f"no protocol frozen ({p} absent); the confirmation set is sealed")
                return 0
            sha = (lockdir / protocol.PROTOCOL_SHA).read_text().split()[0]
            ledger = protocol.read_ledger(lockdir)
            print(f"protocol {p} sha256 {sha}; openings recorded: {len(ledger)}")
            for e in ledger:
                print(f"  opening {e['opening']} at {e['time']} ({e['run']}): primary mean {e['primary']['mean']:.6f}, "
                      f"reaches threshold {e['primary']['reaches_threshold']}, labels {e['labels'] or 'none'}")
    except PipelineError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
