"""``bench.py calibrate``: the calibration rule's time on a development run with the default settings, and the
vectorised simulations' throughput against the plain-loop reference (prints numbers; asserts nothing).

    .venv/bin/python scripts/bench.py calibrate [--rundir results/dev-standin] [--threads 2]

* rule: ``calibration_run.calibration_record`` on the run's per_query.tsv and groups.tsv with the committed
  config's calibration settings (a development run's: config.yaml, not the smoke sizes), ``--threads`` workers
  - what rule calibrate does, timed here (and the rule's own Snakemake benchmark, when the run has one);
* throughput: inner bootstrap replicates per second (B_inner per outer sample, all five methods, every
  comparison) of ``calibration_intervals.sample_intervals`` on the first coverage samples, against
  ``naive_sample_intervals`` (plain Python loops) on the same samples (checked equal), and the ratio. Without
  a finished run it uses synthetic data of the development run's shape (100 queries, 92 groups: 86 of one
  query, 6 of two) and says so."""

from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_data(rundir: Path, cfg: dict):
    """(deltas, positions, primary, metric, label) of a finished run, or synthetic data of its shape."""
    from rerank_study.calibration import calibration_run
    from rerank_study.core.fileio import read_json, read_tsv
    from rerank_study.stats import bootstrap, run_tables

    if (rundir / "calibration.json").exists() or (rundir / "per_query.tsv").exists():
        rows, summary = read_tsv(rundir / "per_query.tsv"), read_json(rundir / "summary.json")
        qids = [r["qid"] for r in rows]
        groups = run_tables.read_groups(rundir / "groups.tsv")[1]
        deltas = calibration_run.run_deltas(rows, cfg["comparisons"]["all"], summary["metric"])
        positions = bootstrap.group_positions(qids, groups)
        return deltas, positions, summary["primary"], summary["metric"], str(rundir)
    import numpy as np

    rng = np.random.default_rng(0)
    positions = [[i] for i in range(86)] + [[86 + 2 * j, 87 + 2 * j] for j in range(7)][:6]
    n = sum(len(g) for g in positions)
    deltas = {name: np.round(rng.normal(0.02, 0.2, n), 6).tolist() for name in cfg["comparisons"]["all"]}
    label = f"synthetic ({n} queries, {len(positions)} groups)"
    return deltas, positions, cfg["comparisons"]["primary"], "ndcg@10", label


def rule_benchmark(rundir: Path):
    path = rundir / "benchmarks" / "calibrate.tsv"
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as fh:
        return float(next(csv.DictReader(fh, delimiter="\t"))["s"])


def throughput(deltas, positions, settings, samples: int, naive_samples: int) -> dict:
    """Replicates/s of the vectorised sample against the plain loops on the same coverage samples."""
    from rerank_study.calibration import calibration as cal
    from rerank_study.calibration import calibration_intervals as civ
    from rerank_study.calibration.calibration_inputs import prepare

    data = prepare(deltas, positions)
    args = []
    for s in range(samples):
        rng = cal.generator(settings.seed, "coverage", s)
        groups = cal.draw(rng, data.G, data.G)
        g_idx = cal.draw(rng, data.G, (settings.B_inner, data.G))
        queries = cal.sample_queries(data, groups)
        q_idx = cal.draw(rng, len(queries), (settings.B_inner, len(queries)))
        args.append((data.sums[:, groups], data.sizes[groups], data.deltas[:, queries], g_idx, q_idx))
    ws = civ.Workspace()
    t0 = time.perf_counter()
    fast = [civ.sample_intervals(*a, settings.percentiles, ws) for a in args]
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = [civ.naive_sample_intervals(*a, settings.percentiles) for a in args[:naive_samples]]
    t_slow = time.perf_counter() - t0
    rate_fast, rate_slow = samples * settings.B_inner / t_fast, naive_samples * settings.B_inner / t_slow
    return {"vectorised replicates/s": round(rate_fast), "naive replicates/s": round(rate_slow),
            "ratio vectorised / naive": round(rate_fast / rate_slow, 1),
            "samples (vectorised / naive)": f"{samples} / {naive_samples}",
            "bit-identical on the shared samples": fast[:naive_samples] == slow}


def main(rundir: str, threads: int) -> int:
    sys.path.insert(0, str(ROOT / "workflow"))
    from rerank_study.calibration import calibration_run
    from rerank_study.settings.config import load_config, run_settings

    cfg = load_config(ROOT / "config" / "config.yaml")
    st = run_settings(cfg)
    settings = calibration_run.settings_of(st["calibration"], st["percentiles"], st["threshold"])
    deltas, positions, primary, metric, label = run_data(Path(rundir), cfg)
    print(f"calibrate  data: {label}; S={settings.S} B_inner={settings.B_inner} R={settings.R} "
          f"S_power={settings.S_power} power_n={list(settings.power_n)}; {threads} worker(s); "
          f"load {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    calibration_run.calibration_record(deltas, positions, settings, primary=primary, metric=metric,
                                       confirmation_n=st["calibration"]["confirmation_n"], workers=threads)
    seconds = time.perf_counter() - t0
    bench = rule_benchmark(Path(rundir))
    own = f" (the run's own rule benchmark, its run's settings: {bench:.1f} s)" if bench is not None else ""
    print(f"calibrate  the rule's computation with the defaults: {seconds:.1f} s{own}")
    for key, val in throughput(deltas, positions, settings, samples=40, naive_samples=2).items():
        print(f"calibrate  {key}: {val}")
    return 0
