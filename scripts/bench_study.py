"""bench.py study: what a whole study costs, end to end, and where the time goes (prints; asserts nothing).

    .venv/bin/python scripts/bench.py study --run [--smoke] [--cores 4] [--data ../shared/data/scifact]
    .venv/bin/python scripts/bench.py study --rundir results/dev-standin [--wall SECONDS]

--run: the README's main command (stand-in scorer, data from --data) into a FRESH results and resources
folder (bench-study/ in the repository, deleted first), so every rule runs as on a fresh machine after set-up:
data verification, the stand-in's construction, candidates, scoring, re-inference, analysis, calibration,
report and the audit with its own re-inference. Its wall time is measured around the snakemake process.

Printed, from the run's own records (measurements/*.json, audit.json, the rules' Snakemake benchmark files):
  * inference per pair: pairs the score rule inferred, pairs rule verify_scores re-inferred against the
    pairs of its sampled batches (ratio target <= 1.1), the audit's own re-inference, and the run's
    inference / its pairs (target <= 1.1 without the audit);
  * verification seconds per pair / scoring seconds per pair (the same model, batches and threads);
  * wall / scoring stage (the score_shard jobs' benchmark seconds; target <= 1.15 for a development run) and
    each rule's seconds, largest first, with the rest named: Snakemake's own start-up and scheduling is wall
    minus the rules' seconds (jobs ran one at a time on this machine when the sum is below the wall).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = "bench-study"


def rule_seconds(*folders: Path) -> dict[str, float]:
    """Each benchmark file's wall seconds (Snakemake's ``s`` column), by its path under the folder."""
    out = {}
    for folder in folders:
        for f in sorted(folder.rglob("*.tsv")) if folder.is_dir() else []:
            with open(f, newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh, delimiter="\t"))
            if rows:
                out[str(f.relative_to(folder).with_suffix(""))] = sum(float(r["s"]) for r in rows)
    return out


def read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def inference(rundir: Path) -> dict:
    """Pairs inferred by each stage and the ratios the cost targets name."""
    score = read(rundir / "measurements/scoring.json")
    verify = read(rundir / "measurements/verification.json")
    record, audit = read(rundir / "verification.json"), read(rundir / "audit.json").get("info", {})
    reinfer = audit.get("reinfer") or {}
    pairs, sampled = score.get("pairs"), record.get("pairs_compared")
    per_pair = {k: m["inference_seconds"] / m["pairs_inferred"]
                for k, m in (("score", score), ("verify", verify)) if m.get("pairs_inferred")}
    return {"pairs": pairs, "score_pairs_inferred": score.get("pairs_inferred"),
            "verify_batches": verify.get("batches"), "verify_sampled_pairs": sampled,
            "verify_pairs_inferred": verify.get("pairs_inferred"),
            "verification_ratio": round(verify["pairs_inferred"] / sampled, 3) if sampled else None,
            "verify_s_per_pair_over_score_s_per_pair": round(per_pair["verify"] / per_pair["score"], 3)
            if len(per_pair) == 2 else None,
            "run_inference_over_pairs": round((score["pairs_inferred"] + verify["pairs_inferred"]) / pairs, 4)
            if pairs and verify else None,
            "audit_reinfer_pairs": reinfer.get("pairs"), "audit_reinfer_seconds": reinfer.get("seconds"),
            # the child process's own wall time; started before the other checks, it runs beside them
            "audit_reinfer_child_seconds": reinfer.get("child_seconds"),
            "audit_reinfer_child_started": reinfer.get("child_started")}


def breakdown(rundir: Path, resources: Path, wall: float | None) -> dict:
    per_run, shared = rule_seconds(rundir / "benchmarks"), rule_seconds(resources / "benchmarks")
    rules = {**{f"resources/{k}": v for k, v in shared.items()}, **per_run}
    scoring = sum(v for k, v in per_run.items() if k.startswith("score_shard/"))
    total = sum(rules.values())
    out = {"scoring_stage_seconds": round(scoring, 1), "sum_of_rule_seconds": round(total, 1),
           "rules_largest_first": {k: round(v, 1) for k, v in sorted(rules.items(), key=lambda kv: -kv[1])}}
    if wall is not None:
        out.update(wall_seconds=round(wall, 1),
                   wall_over_scoring_stage=round(wall / scoring, 3) if scoring else None,
                   snakemake_and_scheduling_seconds=round(wall - total, 1))
    return out


def run_study(smoke: bool, cores: int, data: str) -> tuple[Path, Path, float]:
    work = ROOT / WORK
    shutil.rmtree(work, ignore_errors=True)
    cfg = [f"data_mirror={data}", "scorer=stand-in", f"results={WORK}/results", f"resources={WORK}/resources"]
    cmd = [str(ROOT / ".venv/bin/snakemake"), "--cores", str(cores), "--config", *cfg,
           *(["smoke=true"] if smoke else [])]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the study failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    runs = [p for p in (work / "results").iterdir() if (p / "manifest.json").exists()]
    return runs[0], work / "resources", wall


def main(a) -> int:
    if a.run:
        rundir, resources, wall = run_study(a.smoke, a.cores, a.data)
    else:
        rundir, resources, wall = Path(a.rundir), ROOT / "resources", a.wall
    if not (rundir / "manifest.json").exists():
        print(f"study: {rundir} is not a finished run (no manifest.json)")
        return 1
    print(json.dumps({"run": str(rundir), "load_at_end": round(os.getloadavg()[0], 2),
                      "inference": inference(rundir), "time": breakdown(rundir, resources, wall)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit("run it as: scripts/bench.py study ...")
