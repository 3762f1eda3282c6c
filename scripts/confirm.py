#!/usr/bin/env python3
"""Freeze the confirmation protocol, re-freeze it after a refactor, or show the seal's state.

    python scripts/confirm.py freeze --dev-run results/dev      # once, before any confirmation data is read
    python scripts/confirm.py freeze --study S --dev-run results/S/dev --reranker-run confirm.run
                                                                # a run-file reranker: its confirmation run
                                                                # is pinned now
    python scripts/confirm.py refreeze --reason "..." --dev-run results/dev
                                                                # code refactor, before any opening
    python scripts/confirm.py register --url https://osf.io/...  # where the protocol's sha256 is registered
    python scripts/confirm.py status                            # protocol, openings, the records kept
                                                                # elsewhere, and what an opening now would say
    python scripts/confirm.py freeze-family --family NAME --configfile synthesis.yaml --studies [a,b,c]
                                                                # a family across datasets, frozen before any
                                                                # of its studies opens

Then open the sealed confirmation (the only path that reads the confirmation judgements):

    snakemake confirm --cores 4 --config unseal=<sha256 printed by freeze>

freeze writes lockfiles/protocol.json, protocol.sha256, PREREGISTRATION.md and a 'frozen' line of
lockfiles/confirmation_ledger.jsonl (commit them all). It reads the FINISHED development run: its
manifest and passing audit.json (full development split, the pinned model by its weights' hash, the
code being frozen) and recomputes the grouped variance behind the minimum detectable effect from its
per_query.tsv and groups.tsv. It refuses a STAND-IN or smoke run, and refuses once any opening
started. refreeze records a code change whose development results are byte-identical (shown by a
development run made under the changed code) as a new protocol and a 're-frozen' ledger line.
--allow-standin-for-testing: TEST SUITE ONLY (a test-fixture lock folder; the protocol says test_only).

freeze-family writes lockfiles/families/NAME/family_protocol.json, family_protocol.sha256 and the 'frozen'
line of family_ledger.jsonl (commit them): the studies (each already frozen, none opened), each study's
protocol sha256, the synthesis block of the --configfile files, the threshold they share and the decision
rule. Then open each study, and: snakemake synthesis_confirm --configfile synthesis.yaml --config
studies=[a,b,c] family=NAME (docs/across-datasets.md).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True  # no byte-code caches in the checkout's code folders
sys.path.insert(0, str(ROOT / "workflow"))

from rerank_study.core.errors import PipelineError  # noqa: E402
from rerank_study.seal import family, freeze, locations, status  # noqa: E402
from rerank_study.settings import studies  # noqa: E402
from rerank_study.settings.config import deep_update, load_config  # noqa: E402


def parser() -> argparse.ArgumentParser:
    """The command line: the command and its options."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["freeze", "refreeze", "register", "status", "freeze-family"])
    ap.add_argument("--dev-run", type=Path, help="the finished development run folder (manifest.json "
                                                 "+ audit.json)")
    ap.add_argument("--reason", default="", help="refreeze: why (recorded in the ledger)")
    ap.add_argument("--url", default="", help="register: where the protocol's sha256 is registered outside "
                                                "(an OSF or AsPredicted address)")
    ap.add_argument("--reranker-run", type=Path, default=None,
                    help="freeze, a run-file reranker (study.reranker_kind: run): its TREC run over the "
                         "confirmation queries' frozen candidates, blind-submitted now: copied into "
                         "<lockdir>/reranker/confirm.trec and pinned by the protocol (an opening evaluates "
                         "exactly that file)")
    ap.add_argument("--configfile", type=Path, action="append", default=[],
                    help="extra config files, as given to snakemake (applied in order)")
    ap.add_argument("--lockdir", type=Path, default=None, help="lockfile folder (default: the config's)")
    ap.add_argument("--study", default="",
                    help="another study (a name in config/studies/ or a study file): its protocol and ledger "
                         "live in its own lock folder (default: the default study of config/config.yaml)")
    ap.add_argument("--results", type=Path, default=None,
                    help="the results folder where confirm-* folders the ledgers do not know are looked for "
                         "(default: the config's, relative to the current folder)")
    ap.add_argument("--resources", type=Path, default=None,
                    help="the resources folder whose sealed cache holds verified copies of a look "
                         "(default: the config's, relative to the current folder)")
    ap.add_argument("--family", default="",
                    help="freeze-family: the family's name (its lock folder lockfiles/families/<name>/) or "
                         "the path of its folder")
    ap.add_argument("--studies", default="",
                    help="freeze-family: the family's studies, as studies= is given to snakemake ([a,b,c]: "
                         "names in config/studies/ or study files), one per dataset")
    ap.add_argument("--allow-standin-for-testing", action="store_true",
                    help="TEST SUITE ONLY: freeze from a STAND-IN development run into a "
                         "test-fixture lock folder")
    return ap


def base_config(args) -> dict:
    """config/config.yaml with the --configfile files and --lockdir applied (before any study)."""
    import yaml

    overrides = {}
    for f in args.configfile:
        overrides = deep_update(overrides, yaml.safe_load(f.read_text()))
    if args.lockdir:
        overrides["lockdir"] = str(args.lockdir)
    return load_config(ROOT / "config" / "config.yaml", overrides)


def run_freeze_family(args, cfg: dict) -> int:
    """freeze-family: the studies' configs (as studies=[...] makes them), the synthesis block of cfg."""
    names = studies.parse_study_list(args.studies)
    configs = {}
    for name in names:
        c = studies.study_config(cfg, studies.study_file(name, ROOT))
        configs[c["study"]["name"]] = c
    folder = family.family_folder(args.family, ROOT)
    out = family.freeze_family(folder, configs, cfg["synthesis"], ROOT)
    p = out["protocol"]
    configfiles = "".join(f"--configfile {f} " for f in args.configfile)
    print(f"FROZEN family {p['name']!r}: {folder / locations.FAMILY_PROTOCOL}\nsha256 {out['sha256']}\n"
          + "".join(f"  {s['name']}: protocol {s['protocol_sha256']}\n" for s in p["studies"])
          + f"decision rule: {p['decision_rule']}\n"
          f"commit the family folder (git add {folder} && git commit) and push it; then open each study "
          "(snakemake confirm ... unseal=<its sha256>), then: snakemake synthesis_confirm --cores 4 "
          f"{configfiles}--config studies=[{','.join(names)}] family={args.family}")
    return 0


def run_command(args, cfg: dict, lockdir: Path) -> int:
    """freeze, refreeze, register or status, printing what was done and what to do next; the exit code
    (status: 1 when an opening now would be refused)."""
    if args.command == "freeze":
        out = freeze.freeze(cfg, lockdir, args.dev_run, ROOT, args.allow_standin_for_testing,
                            reranker_run_file=args.reranker_run)
        pw = out["protocol"]["power"]
        print(f"FROZEN {lockdir / locations.PROTOCOL}\nsha256 {out['sha256']}\n"
              f"MDE of the {pw['n_confirmation']}-query confirmation set: {pw['mde_confirmation']:.6f}\n"
              f"commit the whole lock folder (git add {lockdir} && git commit: the protocol, "
              f"PREREGISTRATION.md, the ledger{', the confirmation run' if args.reranker_run else ''}), "
              "push it, then: "
              f"snakemake confirm --cores 4 --config unseal={out['sha256']}"
              + (f" studies=[{args.study}]" if args.study else ""))
    elif args.command == "refreeze":
        out = freeze.refreeze(cfg, lockdir, ROOT, args.reason, args.dev_run)
        print(f"RE-FROZEN {lockdir / locations.PROTOCOL}\nsha256 {out['sha256']} (was "
              f"{out['protocol']['refrozen_from']})\nchanged method files: "
              f"{', '.join(out['changed_files'])}\ncommit the lock folder (git add {lockdir} && git commit), "
              "then: snakemake confirm --cores 4 "
              f"--config unseal={out['sha256']}" + (f" studies=[{args.study}]" if args.study else ""))
    elif args.command == "register":
        sha = freeze.register(lockdir, args.url)
        print(f"REGISTERED protocol {sha} at {args.url} (a 'registered' line of "
              f"{lockdir / locations.LEDGER}); commit and push the ledger")
    else:
        text, ok = status.describe(lockdir, ROOT, cfg)
        print(text)
        return 0 if ok else 1
    return 0


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    cfg = base_config(args)
    if args.command == "freeze-family":
        if not (args.family and args.studies):
            ap.error("freeze-family needs --family NAME and --studies [a,b,...]")
        try:
            return run_freeze_family(args, cfg)
        except PipelineError as exc:
            print(str(exc), file=sys.stderr)
            return 1
    try:
        if args.study:
            cfg = studies.study_config(cfg, studies.study_file(args.study, ROOT))
    except PipelineError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    for key in ("results", "resources"):
        if getattr(args, key):
            cfg[key] = str(getattr(args, key))
    lockdir = Path(cfg["lockdir"])
    lockdir = lockdir if lockdir.is_absolute() else ROOT / lockdir
    try:
        if args.command in ("freeze", "refreeze") and not args.dev_run:
            ap.error(f"{args.command} needs --dev-run (the finished development run folder)")
        return run_command(args, cfg, lockdir)
    except PipelineError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
