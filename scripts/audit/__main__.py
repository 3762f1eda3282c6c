#!/usr/bin/env python3
"""Independent audit of a finished run — Python standard library only.

    python3 -I -S scripts/audit results/<run> [--lockdir lockfiles] [--out results/<run>/audit.json]
                                              [--config config/config.yaml] [--configfile FILE ...]
                                              [--study NAME_OR_FILE]
    python3 -I -S scripts/audit --read-yaml FILE   (what the audit reads from a YAML file, as canonical JSON)
    python3 -I -S scripts/audit --synthesis results/synthesis/<a>+<b>+... --run RUN_A --run RUN_B ...
                                [--configfile FILE ...] [--out FILE]   (a synthesis across datasets:
                                synthesis_checks; the runs in the synthesis's order)
    ... [--reinfer N|all --model-dir resources/models/<folder> [--reinfer-python .venv/bin/python]]
                                              (the auditor's own re-inference: a second stage, needs torch)

Threat model. Who is protected: a researcher on a machine they control, honest but hurried and fallible.
From what: stale, partial, mixed-up or corrupted results, and any number that does not follow from the
pinned inputs: the audit recomputes every number with its own standard-library code and rejects a run whose
files disagree. Not in scope: someone who edits the audit, the environment or results/ on purpose. The
answer to that is a record kept elsewhere (the confirmation ledger pushed to a remote the researcher does not
control, the protocol's sha256 registered outside, e.g. OSF or AsPredicted), not hardening of this client.

It imports nothing from the project and shares no code with it: every definition is re-implemented
from the written definitions (docs/, SOURCE_MAP.md), so an error in the pipeline's code is not repeated
here. It recomputes, from the candidates, the per-pair logits and the qrels: CE ranks, blend scores and
ranks, every per-query metric of the three methods, the evidence groups, every bootstrap replicate of
both schemes and all comparisons from the saved index matrices, the interval endpoints, means, W/T/L,
the leave-one-group-out range and the report's numbers; and it checks every artefact hash against the
manifest and the pins against the lockfiles, and the confirmation seal. What it reads is the documented
layout (``layout``: every artefact, path and role; no other file in the run folder) and every value of it is
recomputed or declared (``columns``: every column and key, its kind, the check that recomputes it); values
are compared as values (8.0 is 8; CRLF and a missing last newline are read as LF);
its anchor is the committed config and lock folder, never what the run names for itself. It holds the logits
to the committed reference runs of the stand-in scorer (check 'reference', within a measured cross-CPU
tolerance).

``--reinfer N``: an optional second stage (check 'reinfer', reinfer.stage): the auditor draws N of the run's
batches with fresh randomness and re-infers them with upstream sentence-transformers in a child process
(``reinfer/child.py``, the one module that needs torch, run with the environment's python; audit.json records
the interpreter and the sha256 of every model file it loaded); without it the standard-library audit runs
alone and says the stage was not asked for.

Structure (one module per job, in rooms: a package per concept, whose __init__.py says what lives there;
this folder first on sys.path, each module imported as <room>.<module>): ``read.run_files`` reads what the
run folder says (each file once, on first use); ``anchor.anchors`` says what the run must have used
(committed config / frozen protocol, lock folder pins); ``expected.expected`` and
``expected.expected_summary`` recompute what the definitions (``expected.definitions``, ``expected.rng``)
say the files must hold; each ``check_*`` of the ``checks`` modules compares the two for one subject (values
as ``core.compare`` compares them) and records every comparison under its name (``core.bookkeeping``), in
the order of ``checks.registry``. FAIL CLOSED: a check whose input is missing or unreadable fails (naming
what is missing); it never skips.

Exit status 0 when every check passes; 1 when any check fails (each failure names the check, file, item
and expected vs found); 2 when the folder is not a run at all (no manifest). Floats are compared
EXACTLY by value: the pipeline writes round-trip text and both sides add in the documented order (group sums
in group order, replicate sums in draw order); report.md's rounded numbers at the precision shown.
``--read-yaml``: exit 0 with the JSON on stdout, 1 when the audit's YAML reader refuses the file (the reason
on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

# Byte code: the audit's modules are compiled from their source, never from a cache beside them (a planted
# .pyc would run instead of the source), and no cache is written into the checkout (the seal refuses untracked
# files)
sys.dont_write_bytecode = True
# a folder that cannot exist: nothing read or written
sys.pycache_prefix = os.path.join(os.devnull, "pycache")

from anchor.anchors import DEFAULT_CONFIG, Anchor, committed_lockdir  # noqa: E402
from checks.registry import run_checks  # noqa: E402
from core.bookkeeping import MAX_FAILURES_SHOWN, Audit  # noqa: E402
from core.problems import Unauditable, Unreadable  # noqa: E402
from expected.expected import Expected  # noqa: E402
from read.readers import one_read_per_file, sha256_of  # noqa: E402
from read.run_files import RunFiles  # noqa: E402
from read.yamlsubset import yaml_as_compact_json  # noqa: E402
from reinfer import stage as reinfer_stage  # noqa: E402
from synthesis import synthesis_checks  # noqa: E402


def audit_run(rundir: Path, lockdir: Path | None, au: Audit, config_anchor: Path = DEFAULT_CONFIG,
              study_anchor: Path | None = None, config_files: tuple = ()) -> dict:
    """Every check on the run folder (recorded in ``au``), each file read once (its hash and every parse see
    the same bytes); returns audit.json's ``info``."""
    with one_read_per_file():
        return _checked_run(rundir, lockdir, au, config_anchor, study_anchor, config_files)


def _checked_run(rundir, lockdir, au, config_anchor, study_anchor, config_files) -> dict:
    t0 = time.perf_counter()
    source = "--lockdir"
    if lockdir is None:  # the committed lock folder, never the one the run names
        lockdir, source = committed_lockdir(config_anchor, study_anchor), "the committed config / study file"
    run = RunFiles(rundir, lockdir)
    want = Expected(run, Anchor(run.kind, run.lockdir, config_anchor, study_anchor, run.manifest_settings,
                                source, config_files))
    try:
        run.reranker_kind = want.anchor.reranker_kind  # what the run's reranker is, by the anchor
    except (OSError, KeyError, ValueError, TypeError, Unreadable):
        pass  # an unreadable anchor fails check 'settings' and every check it feeds (they read it too)
    run_checks(au, run, want)
    info = {"run": run.manifest.get("run"), "kind": run.kind, "scorer": run.scorer,
            "anchor": {"config": str(config_anchor), "config_sha256": sha256_of(config_anchor),
                       "config_files": [{"path": str(p), "sha256": sha256_of(p)} for p in config_files],
                       **({"study_file": str(study_anchor), "study_file_sha256": sha256_of(study_anchor)}
                          if study_anchor else {})},
            "manifest_sha256": sha256_of(run.manifest_path),  # which manifest this audit vouches for
            "lockdir": {"path": str(lockdir), "given_by": source}}
    for key, fn in (("queries", lambda: len(run.analysed)), ("pairs", lambda: run.n_pairs),
                    ("groups", lambda: len(want.groups)),
                    ("replicates", lambda: want.settings["bootstrap_B"])):
        try:
            info[key] = fn()
        except Exception:  # noqa: BLE001 - the failing check has already said why
            info[key] = None
    info["reinfer"] = reinfer_stage.REQUEST.record  # the second stage: what was drawn, how, its own seconds
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return info


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rundir", type=Path, nargs="?")
    ap.add_argument("--lockdir", type=Path, default=None,
                    help="lockfile folder (default: the one the committed config names, or the study file's; "
                         "never the folder a run names for itself)")
    ap.add_argument("--out", type=Path, default=None, help="where to write audit.json (default: "
                                                           "RUNDIR/audit.json)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                    help="the committed config a development run is anchored to (default: this checkout's "
                         "config/config.yaml); a confirmation opening is anchored to <lockdir>/protocol.json")
    ap.add_argument("--configfile", type=Path, action="append", default=[],
                    help="a config file the run's invocation gave (snakemake --configfile), merged over "
                         "--config in order; the DAG's audit rule passes them")
    ap.add_argument("--study", type=Path, default=None,
                    help="another study: its name (config/studies/<name>.yaml) or its study file; the file's "
                         "values over the committed config are the development run's anchor (a run of a "
                         "study needs it: the DAG's audit rule passes it)")
    ap.add_argument("--read-yaml", type=Path, default=None, metavar="FILE",
                    help="print what the audit's YAML reader reads from FILE as canonical JSON and exit (no "
                         "audit; the library compares it with PyYAML at start)")
    reinfer_arguments(ap)
    synthesis_arguments(ap)
    args = ap.parse_args(argv)
    if args.synthesis is not None:
        return synthesis_args(ap, args)
    if args.read_yaml is not None:
        if args.rundir is not None:
            ap.error("--read-yaml FILE takes no run folder")
        return args
    if args.rundir is None:
        ap.error("the following arguments are required: rundir")
    if args.study is not None and not args.study.suffix in (".yaml", ".yml"):
        args.study = DEFAULT_CONFIG.parent / "studies" / f"{args.study}.yaml"  # a study's name
    if args.study is not None and not args.study.is_file():
        ap.error(f"--study {args.study}: no such study file")
    out = args.out if args.out is not None else args.rundir / "audit.json"
    if not out.parent.is_dir():
        ap.error(f"--out {out}: its folder does not exist (the verdict could not be written)")
    own = (args.rundir / "audit.json").resolve()
    if out.resolve() != own and out.resolve().is_relative_to(args.rundir.resolve()):
        ap.error(f"--out {out}: inside the run folder only as {own} (it would overwrite an artefact of the "
                 "run)")
    if args.reinfer is not None and args.model_dir is None:
        ap.error("--reinfer needs --model-dir (the scorer's model folder, e.g. resources/models/<folder>)")
    return args


def synthesis_arguments(ap) -> None:
    ap.add_argument("--synthesis", type=Path, default=None, metavar="FOLDER",
                    help="audit a synthesis across datasets (results/synthesis/<a>+<b>+...) instead of a "
                         "run; --run names each study's run folder, in the synthesis's order")
    ap.add_argument("--run", type=Path, action="append", default=[],
                    help="with --synthesis: a study's run folder (repeat, in the synthesis's order)")


def synthesis_args(ap, args):
    if args.rundir is not None:
        ap.error("--synthesis FOLDER takes no run folder (name the studies' runs with --run)")
    if not (args.synthesis / "synthesis.json").is_file():
        ap.error(f"--synthesis {args.synthesis}: no synthesis.json in it")
    if not args.run:
        ap.error("--synthesis needs the studies' run folders (--run RUN, in the synthesis's order)")
    return args


def reinfer_count(text: str):
    if text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of batches (1 or more) or 'all'")
    return int(text)


def reinfer_arguments(ap) -> None:
    ap.add_argument("--reinfer", type=reinfer_count, default=None, metavar="N|all",
                    help="second stage: re-infer N of the run's (qid, batch) batches drawn with fresh "
                         "randomness (all: every batch) with upstream sentence-transformers in a child "
                         "process (needs torch; check 'reinfer'); without it the check records that the "
                         "stage was not asked for")
    ap.add_argument("--model-dir", type=Path, default=None,
                    help="with --reinfer: the scorer's model folder (MODEL.json and the model "
                         "files; verified)")
    ap.add_argument("--derived-file", type=Path, default=None,
                    help="with --reinfer, for a run of a derived backend (ce.backend: onnx, onnx-int8): its "
                         "derived file (verified against the lock folder's pin), re-inferred with ONNX "
                         "Runtime")
    ap.add_argument("--reinfer-python", type=Path, default=None,
                    help="with --reinfer: the python that runs reinfer/child.py (default: this interpreter)")
    ap.add_argument("--reinfer-threads", type=int, default=1, help="with --reinfer: torch threads "
                                                                   "(speed only)")
    ap.add_argument("--reinfer-seed", type=int, default=None,
                    help="TESTS ONLY: the draw's seed chosen by hand instead of fresh randomness "
                         "(recorded as such)")


def read_yaml(path: Path) -> int:
    try:
        text = yaml_as_compact_json(path)
    except Unreadable as exc:
        print(exc, file=sys.stderr)
        return 1
    print(text)
    return 0


def print_verdict(rundir: Path, info: dict, au: Audit) -> int:
    print(f"audit of {rundir} ({info['kind']}, scorer {info['scorer']}): {info['queries']} queries, "
          f"{info['pairs']} pairs, {info['groups']} groups, B={info['replicates']}, {info['seconds']} s")
    stage = info.get("reinfer", {})
    if not stage.get("asked"):
        print("re-inference (--reinfer): not asked for")
    elif "drawn" in stage:
        print(f"re-inference (--reinfer): {len(stage['drawn'])} of {stage['batches_in_run']} batches drawn, "
              f"{stage.get('pairs', 0)} pairs re-inferred, {stage.get('seconds')} s")
    else:
        print("re-inference (--reinfer): asked for, but no batch could be drawn (see check 'reinfer')")
    print(f"{'check':<20} {'checked':>9} {'failed':>7}")
    for n, c in au.checks.items():
        print(f"{n:<20} {c['checked']:>9} {len(c['failures']):>7}")
    failed = au.failed
    if failed:
        print("\nFAILED CHECKS:")
        for n in failed:
            for fl in au.checks[n]["failures"][:MAX_FAILURES_SHOWN]:
                print(f"  [{n}] {fl['file']} :: {fl['item']} :: expected {fl['expected']!r} found "
                      f"{fl['found']!r}")
            extra = len(au.checks[n]["failures"]) - MAX_FAILURES_SHOWN
            if extra > 0:
                print(f"  [{n}] ... and {extra} more")
        print(f"AUDIT FAILED: {', '.join(failed)}")
        return 1
    print("AUDIT PASSED: every check agrees")
    return 0


def write_result(out: Path, result: dict) -> None:
    tmp = out.with_name(f".{out.name}.partial")
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)


def terminated(signum, frame) -> None:
    """A signal ends the audit as an interruption does (its children are stopped, the verdict failed)."""
    raise SystemExit(128 + signum)


# what --out holds while the audit runs: an audit that never ends normally (a kill) leaves a failed verdict
IN_PROGRESS = {"ok": False, "failed_checks": ["audit"],
               "error": "no verdict: the audit was ended before it wrote one (or is still running)"}


def main(argv=None) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):  # each ends the audit as SIGINT does
        if signal.getsignal(sig) != signal.SIG_IGN:  # one the caller ignores stays ignored (nohup)
            signal.signal(sig, terminated)
    args = parse_args(argv)
    if args.read_yaml is not None:
        return read_yaml(args.read_yaml)
    if args.synthesis is not None:
        return synthesis_checks.main_synthesis(args, write_result)
    au = Audit()
    if args.reinfer is not None:
        reinfer_stage.configure(batches=args.reinfer, model_dir=args.model_dir, seed=args.reinfer_seed,
                                python=args.reinfer_python, threads=args.reinfer_threads,
                                derived_file=args.derived_file)
    out = args.out or (args.rundir / "audit.json")
    if out.parent.is_dir():  # until the verdict is written, the last word is that there is none
        write_result(out, IN_PROGRESS)
    try:
        info = audit_run(args.rundir, args.lockdir, au, args.config, args.study, tuple(args.configfile))
    # noqa: BLE001 - no verdict but a failed one may stay behind (an older audit.json); a signal too
    except BaseException as exc:
        if out.parent.is_dir():
            write_result(out, {"ok": False, "failed_checks": ["audit"],
                               "error": f"{type(exc).__name__}: {exc}"})
        if isinstance(exc, Unauditable):
            print(f"AUDIT ERROR: {args.rundir} cannot be audited: {exc}", file=sys.stderr)
            return 2
        raise
    finally:
        reinfer_stage.stop_children()  # no re-inference child outlives the audit
    write_result(out, au.result(info))
    return print_verdict(args.rundir, info, au)


if __name__ == "__main__":
    raise SystemExit(main())
