#!/usr/bin/env python3
"""Speed, memory and determinism numbers of the scoring stage (prints them; asserts nothing; not a test).

    .venv/bin/python scripts/bench.py score  [--queries 12] [--threads 2] [--data DIR]    # speed + memory
    .venv/bin/python scripts/bench.py stress [--reps 50] [--threads 4]                     # determinism
    .venv/bin/python scripts/bench.py bootstrap | audit [--rundir results/dev-standin]
    .venv/bin/python scripts/bench.py calibrate [--rundir results/dev-standin] [--threads 2]
    .venv/bin/python scripts/bench.py study --run [--smoke] | --rundir results/dev-standin   # a study's cost
    .venv/bin/python scripts/bench.py profile [--queries 4] [--threads 2]       # utilisation per stage
    .venv/bin/python scripts/bench.py plan [--measure | --check] [...]          # capacity model (bench_plan)
    .venv/bin/python scripts/bench.py backends [--queries 12] [--rounds 2] [--retention]   # derived rerankers
    .venv/bin/python scripts/bench.py synthesis        # 15 synthetic studies across datasets (target 5 s)

Data: the verified SciFact files (``--data``, default resources/data/scifact, i.e. after one run of the
pipeline; ../shared/data/scifact works too), the committed frozen candidates and development split, and the
STAND-IN cross-encoder (same architecture and tokenizer as the pinned model; built into --models).

score: ONE child process, in the scoring contract's numeric mode, on the same pairs (the first --queries
development queries x 50 candidates):
  * peak RSS of the pipeline path alone (measured before anything else is loaded);
  * sgemm ceiling: best torch.mm (5632x384) @ (384x1536) fp32 at the same thread count, before and after;
  * wall seconds per path, in interleaved rounds (A B C, then C B A):
      ours     = rerank_study.reranker.scoring.score_run (per query, token-length-sorted chunks of 16,
      tokenise once),
      upstream = sentence-transformers CrossEncoder.predict(all pairs, batch_size=16) (one global length sort,
                 batches mix queries),
      before   = this project's earlier batching (per query, candidate-order chunks of 16);
  * ratio = upstream seconds / ours seconds (> 1: ours is faster); pairs/s;
  * useful-FLOP utilisation = useful FLOPs / seconds / ceiling, where useful FLOPs = sum over pairs of
    scoring.useful_flops(real tokens): 6 layers x [2 n (4 h^2 + 2 h f) + 4 n^2 h], h = 384, f = 1536, no
    padding (embeddings, norms, softmax, GELU, pooler, head left out); padding efficiency = real tokens /
    padded tokens of each path's batches.
stress: ONE child process scores the same batches (real dev pairs: 16-row, 10-row (the smoke shape), 5-row
and 2-row batches, short to truncated-at-512) --reps times, each at a random thread count (1-4), with
perturbations between repetitions (random allocations kept alive or freed at odd offsets, thread-count
flips with forwards of other shapes, random GEMMs), and counts float32-bit mismatches against repetition 0.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DATA = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1] + "/workflow")
from rerank_study.reranker import numerics
PROCESS = numerics.configure_process()
import torch
from rerank_study.data import beir, pins
from rerank_study.rankings import candidates
from rerank_study.reranker import models, scoring, scoring_batches, scoring_model
ARGS = json.loads(sys.argv[2])
S = scoring.ScoringSettings(512, "longest_first", 16, 110, "float32")
MODE = scoring_model.setup_torch(S, threads=ARGS["threads"])
folder = ARGS["models"] + "/bench-standin"
mp = pins.load_model_pins(sys.argv[1] + "/lockfiles")
if not os.path.exists(folder + "/MODEL.json"):
    models.build_standin(mp["bi_encoder"], mp["cross_encoder"], folder, 110, 0.02)
tok = scoring_model.load_tokenizer(folder)
queries = beir.read_queries(ARGS["data"] + "/queries.jsonl")
ranked_all = candidates.read_candidates(sys.argv[1] + "/lockfiles/candidates/candidates.tsv")
dev = open(sys.argv[1] + "/lockfiles/splits/dev.txt").read().split()
qids = dev[:ARGS["queries"]]
ranked = {q: ranked_all[q] for q in qids}
need = {d for q in qids for d in ranked[q]}
doc_text = {}
with open(ARGS["data"] + "/corpus.jsonl", encoding="utf-8") as fh:
    for line in fh:
        rec = json.loads(line)
        if rec["_id"] in need:
            doc_text[rec["_id"]] = beir.doc_text(rec.get("title", ""), rec.get("text", ""))


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
"""
# every child but the backends' loads the torch model
COMMON = DATA + "model = scoring_model.load_model(folder)\n"

SCORE_CHILD = COMMON + r"""
import numpy as np


def sgemm_gflops(reps=20):
    a, b = torch.randn(5632, 384), torch.randn(384, 1536)
    c = torch.empty(5632, 1536)
    for _ in range(3):
        torch.mm(a, b, out=c)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); torch.mm(a, b, out=c); ts.append(time.perf_counter() - t0)
    ts.sort()
    fl = 2.0 * 5632 * 384 * 1536
    return fl / ts[0] / 1e9, fl / ts[len(ts) // 2] / 1e9


def ours():
    rows, counts = scoring.score_run(ranked, queries, doc_text, tok, lambda: model, S, "bench", {}, None,
                                     after_query=numerics.malloc_trim)
    return [r["logit"] for r in rows]


def before():  # the earlier batching: per query, candidate order, chunks of 16, char order inside a batch
    out = []
    for q, docs in ranked.items():
        dt = [doc_text[d] for d in docs]
        for s in range(0, len(dt), 16):
            out += scoring_model.score_batch(tok, model, [queries[q]] * len(dt[s:s + 16]), dt[s:s + 16], S)
    return out


pairs = [[queries[q], doc_text[d]] for q in ranked for d in ranked[q]]
feats, stats = scoring_batches.encode_pairs(tok, [p[0] for p in pairs], [p[1] for p in pairs], 512)
lengths = [len(f["input_ids"]) for f in feats]
useful = sum(scoring.useful_flops(n) for n in lengths)


def padded_tokens(batches):
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


off, plans = 0, {"ours": [], "before": []}
for q in ranked:
    n = len(ranked[q])
    plans["ours"] += [[off + i for i in b] for b in scoring_batches.batch_plan(lengths[off:off + n], 16)]
    plans["before"] += [list(range(off + s, off + min(s + 16, n))) for s in range(0, n, 16)]
    off += n
glob = np.argsort([-(len(p[0]) + len(p[1])) for p in pairs]).tolist()  # predict's global character sort
plans["upstream"] = [glob[s:s + 16] for s in range(0, len(glob), 16)]

t0 = time.perf_counter(); ours(); warm = time.perf_counter() - t0  # round 0: the pipeline path alone
rss_ours = rss_mib()
ceil_before = sgemm_gflops()
from sentence_transformers import CrossEncoder
ce = CrossEncoder(folder, device="cpu")
ce.predict(pairs[:4], batch_size=16)
paths = {"ours": ours, "upstream": lambda: ce.predict(pairs, batch_size=16, show_progress_bar=False).tolist(),
         "before": before}
secs = {k: [] for k in paths}
order = list(paths)
for r in range(ARGS["rounds"]):
    for name in (order if r % 2 == 0 else order[::-1]):
        t0 = time.perf_counter(); paths[name](); secs[name].append(time.perf_counter() - t0)
ceil_after = sgemm_gflops()
ceiling = max(ceil_before[0], ceil_after[0])
res = {"pairs": len(pairs), "queries": len(ranked), "threads": torch.get_num_threads(),
       "numerics": MODE["mkl_cnr"], "cpus_available": len(os.sched_getaffinity(0)),
       "load_avg_start_end": [ARGS["load"], round(os.getloadavg()[0], 2)],
       "useful_tflop": round(useful / 1e12, 3), "mean_tokens": round(sum(lengths) / len(lengths), 1),
       "sgemm_ceiling_gflops": {"best_before": round(ceil_before[0], 1),
                                "median_before": round(ceil_before[1], 1),
                                "best_after": round(ceil_after[0], 1),
                                "median_after": round(ceil_after[1], 1),
                                "used": round(ceiling, 1)},
       "peak_rss_mib_pipeline_path": round(rss_ours, 1), "peak_rss_mib_process_end": round(rss_mib(), 1),
       "first_pass_seconds_ours": round(warm, 2), "paths": {}}
for name, ts in secs.items():
    best = min(ts)
    res["paths"][name] = {"seconds": [round(t, 2) for t in ts], "best_seconds": round(best, 2),
                          "pairs_per_second": round(len(pairs) / best, 2),
                          "useful_gflops_per_second": round(useful / best / 1e9, 1),
                          "utilisation_of_ceiling": round(useful / best / 1e9 / ceiling, 3),
                          "padding_efficiency": round(sum(lengths) / padded_tokens(plans[name]), 3)}
res["ratio_upstream_over_ours"] = round(min(secs["upstream"]) / min(secs["ours"]), 3)
res["ratio_before_over_ours"] = round(min(secs["before"]) / min(secs["ours"]), 3)
print(json.dumps(res))
"""

STRESS_CHILD = COMMON + r"""
import random
import numpy as np

enc = scoring_batches.PairEncoder(tok, 512)


def token_sorted(q):
    docs = [doc_text[d] for d in ranked[q]]
    feats, _ = enc.pairs([queries[q]] * len(docs), docs)
    plan = scoring_batches.batch_plan([len(f["input_ids"]) for f in feats], 16)
    return [[(queries[q], docs[i]) for i in b] for b in plan]


q0, q1 = qids[0], qids[1]
b0, b1 = token_sorted(q0), token_sorted(q1)
# 16 rows (longest, truncated at 512), 16 rows (shortest full chunk), 2 rows (the ragged last chunk),
# the smoke shape (a query's top 10 in candidate order) and a 5-row batch
batches = [b0[0], b0[2], b0[3], [(queries[q1], doc_text[d]) for d in ranked[q1][:10]], b1[1][:5]]
others = [b for q in qids[2:] for b in token_sorted(q)]
rng = random.Random(ARGS["seed"])
keep = []


def score_all(threads):
    torch.set_num_threads(threads)
    out = []
    for b in batches:
        out += scoring_model.score_batch(tok, model, [p[0] for p in b], [p[1] for p in b], S)
    return np.asarray(out, dtype=np.float32).view(np.uint32)


def p_alloc():
    global keep
    for _ in range(rng.randint(3, 12)):
        kind, n = rng.choice(["torch", "numpy", "bytes"]), int(2 ** rng.uniform(10, 26))  # 1 KiB .. 64 MiB
        if kind == "torch":
            x = torch.empty(n // 4 + rng.randint(0, 63), dtype=torch.float32).uniform_()[rng.randint(0, 15):]
        elif kind == "numpy":
            x = np.ones(n // 8 + rng.randint(0, 7))
        else:
            x = bytearray(n + rng.randint(0, 63))
        if rng.random() < 0.3:
            keep.append(x)
    if len(keep) > 20:
        rng.shuffle(keep)
        keep = keep[:10]


def p_other():
    b = rng.choice(others)[: rng.randint(1, 16)]
    scoring_model.score_batch(tok, model, [p[0] for p in b], [p[1] for p in b], S)


def p_threads():
    for t in rng.sample([1, 2, 3, 4], 4):
        torch.set_num_threads(t)
        if rng.random() < 0.5:
            p_other()
        else:
            m = rng.randint(16, 1024)
            torch.mm(torch.randn(m, 384), torch.randn(384, rng.choice([384, 1536])))


def p_gemm():
    m, k, n = rng.randint(1, 3000), rng.randint(1, 1600), rng.randint(1, 1600)
    torch.mm(torch.randn(m, k), torch.randn(k, n))


t0 = time.perf_counter()
ref = score_all(ARGS["threads"])
mismatched_reps, mismatched_logits, used = 0, 0, []
for rep in range(ARGS["reps"]):
    for p in rng.sample([p_alloc, p_other, p_threads, p_gemm], rng.randint(1, 4)):
        p()
    t = rng.choice([1, 2, 3, 4])
    used.append(t)
    bits = score_all(t)
    d = int((bits != ref).sum())
    mismatched_reps += d > 0
    mismatched_logits += d
    if ARGS["progress"]:
        print(f"rep {rep + 1}/{ARGS['reps']} threads {t}: {d} mismatching logits", file=sys.stderr,
              flush=True)
print(json.dumps({"reps": ARGS["reps"], "batches": [len(b) for b in batches], "logits_per_rep": int(ref.size),
                  "logits_compared": int(ref.size) * ARGS["reps"], "mismatching_reps": mismatched_reps,
                  "mismatching_logits": mismatched_logits, "numerics": MODE["mkl_cnr"],
                  "thread_counts_used": {str(k): used.count(k) for k in sorted(set(used))},
                  "seconds": round(time.perf_counter() - t0, 1), "peak_rss_mib": round(rss_mib(), 1)}))
"""


def child(code: str, args: dict) -> int:
    data = Path(args["data"])
    if not (data / "corpus.jsonl").exists():
        print(f"no verified SciFact data at {data}: run the pipeline once (resources/data/scifact) "
              "or pass --data")
        return 1
    Path(args["models"]).mkdir(parents=True, exist_ok=True)
    args["load"] = round(os.getloadavg()[0], 2)
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), json.dumps(args)], stdout=subprocess.PIPE,
                         text=True)
    if out.returncode != 0:
        print(f"child failed ({out.returncode})")
        return out.returncode
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(res, indent=1))
    return 0


def bench_bootstrap():
    sys.path.insert(0, str(ROOT / "workflow"))
    import numpy as np

    from rerank_study.stats import bootstrap as bs

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
        out = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(rundir),
                              "--out", f"{tmp}/audit.json"], capture_output=True, text=True)
    print(f"audit  {rundir}: exit {out.returncode}, {time.perf_counter() - t0:.2f} s wall "
          f"({out.stdout.splitlines()[0] if out.stdout else out.stderr[-300:]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["score", "stress", "bootstrap", "audit", "calibrate", "study",
                                     "profile", "plan", "backends", "synthesis"])
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="torch threads (default: the CPUs this process may use)")
    ap.add_argument("--queries", type=int, default=12, help="development queries (x 50 candidates)")
    ap.add_argument("--rounds", type=int, default=2, help="score: timed rounds per path (interleaved)")
    ap.add_argument("--reps", type=int, default=50, help="stress: repetitions")
    ap.add_argument("--seed", type=int, default=12345, help="stress: perturbation seed")
    ap.add_argument("--progress", action="store_true", help="stress: one line per repetition on stderr")
    ap.add_argument("--data", default=str(ROOT / "resources/data/scifact"))
    ap.add_argument("--models", default=str(ROOT / "resources/models"))
    ap.add_argument("--rundir", default=str(ROOT / "results/dev-standin"))
    ap.add_argument("--run", action="store_true", help="study: run the README's main command, fresh folders")
    ap.add_argument("--smoke", action="store_true", help="study --run: the smoke size")
    ap.add_argument("--cores", type=int, default=4, help="study --run: snakemake --cores")
    ap.add_argument("--retention", action="store_true",
                    help="backends: the whole development split, then each backend's conclusion retention")
    ap.add_argument("--wall", type=float, default=None, help="study --rundir: its wall seconds")
    a, rest = ap.parse_known_args()
    if rest and a.what != "plan":
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    args = {"threads": a.threads, "queries": a.queries, "rounds": a.rounds, "reps": a.reps, "seed": a.seed,
            "progress": a.progress, "data": a.data, "models": a.models}
    if a.what == "score":
        return child(SCORE_CHILD, args)
    if a.what == "stress":
        return child(STRESS_CHILD, {**args, "queries": max(a.queries, 3)})
    sys.path.insert(0, str(ROOT / "scripts"))
    if a.what == "profile":
        import bench_profile

        return child(COMMON + bench_profile.PROFILE_CHILD, args)
    if a.what == "plan":
        import bench_plan

        return bench_plan.main(rest, child, COMMON, args)
    if a.what == "backends":
        import bench_backends

        return bench_backends.main(a, DATA, args)
    if a.what == "study":
        import bench_study

        return bench_study.main(a)
    if a.what == "synthesis":
        import bench_synthesis

        return bench_synthesis.main()
    if a.what == "calibrate":
        import bench_calibrate

        return bench_calibrate.main(a.rundir, a.threads)
    if a.what == "bootstrap":
        bench_bootstrap()
    else:
        bench_audit(a.rundir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
