#!/usr/bin/env python3
"""Speed and memory numbers (prints them; asserts nothing). Not part of the test suite.

    .venv/bin/python scripts/bench.py                       # everything, on the data the project has
    .venv/bin/python scripts/bench.py --only score --threads 4 2 --pairs 800
    .venv/bin/python scripts/bench.py --only audit --rundir results/dev-standin

* score: cross-encoder pairs/second with the STAND-IN (same architecture and token counts as the
  pinned model) under the project's batching, per thread count, each in a fresh process, with its
  peak RSS; pairs are the development queries' candidates (resources/splits/dev.txt order);
* bootstrap: vectorised grouped replicates (B=10000, G=94 groups over 100 queries) per comparison;
* audit: wall time of scripts/audit.py (python -I -S) on a finished run.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCORE_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1] + "/workflow")
from rerank_study import beir, candidates, models, scoring
threads, n_pairs, res = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = scoring.ScoringSettings(512, "longest_first", 16, threads, 110, "float32")
scoring.setup_torch(s)
mp = models.load_model_pins(sys.argv[1] + "/lockfiles")
folder = res + "/models/bench-standin"
models.build_standin(mp["bi_encoder"], mp["cross_encoder"], folder, 110, 0.02)
t0 = time.perf_counter(); tok, model = scoring.load_cross_encoder(folder); t_load = time.perf_counter() - t0
corpus = beir.read_corpus(res + "/data/scifact/corpus.jsonl")
queries = beir.read_queries(res + "/data/scifact/queries.jsonl")
ranked = candidates.read_candidates(sys.argv[1] + "/lockfiles/candidates/candidates.tsv")
dev = [l for l in open(res + "/splits/dev.txt").read().split("\n") if l]  # development queries only
done, t_inf, trunc = 0, 0.0, 0
for q in dev:
    docs = ranked[q]
    if done >= n_pairs:
        break
    dt = [corpus[d].full_text for d in docs]
    trunc += sum(x["truncated"] for x in scoring.token_stats(tok, [queries[q]] * len(dt), dt, 512))
    for idx in scoring.chunks(list(range(len(docs))), 16):
        t0 = time.perf_counter()
        scoring.score_batch(tok, model, [queries[q]] * len(idx), [dt[i] for i in idx], s)
        t_inf += time.perf_counter() - t0
    done += len(docs)
print(json.dumps({"threads": threads, "pairs": done, "truncated": trunc, "load_s": round(t_load, 2),
                  "inference_s": round(t_inf, 2), "pairs_per_s": round(done / t_inf, 2),
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def bench_score(threads, pairs, resources):
    if not (Path(resources) / "data/scifact/corpus.jsonl").exists():
        print("score: no verified data in resources/ yet: run the pipeline first")
        return
    for t in threads:
        out = subprocess.run([sys.executable, "-c", SCORE_CHILD, str(ROOT), str(t), str(pairs), str(resources)],
                             capture_output=True, text=True)
        line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else out.stderr[-500:]
        print(f"score  {line}")


def bench_bootstrap():
    sys.path.insert(0, str(ROOT / "workflow"))
    import numpy as np

    from rerank_study import bootstrap as bs

    rng = np.random.default_rng(0)
    deltas = rng.normal(0, 0.2, 100).tolist()
    positions = [[i] for i in range(88)] + [[88 + 2 * j, 89 + 2 * j] for j in range(6)]
    g, q = bs.draw_indices(110, len(positions), 100, 10000)
    t0 = time.perf_counter()
    for _ in range(3):
        bs.grouped_replicates(deltas, positions, g)
        bs.query_replicates(deltas, q)
    print(f"bootstrap  3 comparisons x (grouped + query) x B=10000: {time.perf_counter() - t0:.3f} s")


def bench_audit(rundir):
    if not (Path(rundir) / "manifest.json").exists():
        print(f"audit: {rundir} is not a finished run")
        return
    import tempfile

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts/audit.py"), str(rundir), "--out",
                              f"{tmp}/audit.json"], capture_output=True, text=True)
    print(f"audit  {rundir}: exit {out.returncode}, {time.perf_counter() - t0:.2f} s wall "
          f"({out.stdout.splitlines()[0] if out.stdout else out.stderr[-300:]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["score", "bootstrap", "audit"])
    ap.add_argument("--threads", type=int, nargs="+", default=[4, 2])
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--resources", default=str(ROOT / "resources"))
    ap.add_argument("--rundir", default=str(ROOT / "results/dev-standin"))
    a = ap.parse_args()
    if a.only in (None, "score"):
        bench_score(a.threads, a.pairs, a.resources)
    if a.only in (None, "bootstrap"):
        bench_bootstrap()
    if a.only in (None, "audit"):
        bench_audit(a.rundir)


if __name__ == "__main__":
    main()
