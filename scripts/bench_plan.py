"""bench.py plan: a capacity model for studies on a cluster, and its check on the local SLURM (prints).

    .venv/bin/python scripts/bench.py plan --measure [--threads-list 1,2] [--data ../shared/data/scifact]
    .venv/bin/python scripts/bench.py plan [--nodes 4] [--cores 32] [--job-threads 4] [--rerankers 1]
    .venv/bin/python scripts/bench.py plan --check [--shards 1,2,4] [--check-queries 20] [--data ...]

--measure: ONE child process, strict CNR, the stand-in (the pinned model's architecture): the forward of a
batch of 16 pairs padded to n tokens, n in 64 128 256 384 512, at each thread count (best of 3), fitted per
thread count by least squares as seconds per pair s_t(n) = a_t n + b_t n^2 (the linear layers grow with n,
attention with n^2); plus the tokens per whitespace word of SciFact's development pairs, and the seconds a
scoring job spends before its first batch (interpreter, imports, model load). Written to
resources/bench/speed.json (a measurement of this machine kind).

plan: for each of BEIR's 15 public datasets (query counts and mean word lengths: DATASETS, with their
source), pairs = queries x depth; mean pair length n = min(512, words x tokens-per-word + 3). A study scores
each pair once (development part + confirmation opening), re-infers the verification sample (8 batches of
16) and the audit's 2 batches, and runs the rest of the DAG (--fixed seconds, measured by `bench.py study`:
wall minus scoring stage). On N nodes x C cores with T threads per scoring job: slots = N x floor(C / T),
shards = slots;
    wall = fixed + (critical jobs) x job overhead + scoring stage (simulated_wall: every shard's job start,
           overhead and ceil(pairs / shards) x s_T(n), seen by the executor's polls, then the gather job)
    core-hours = (shards x T x (job start + overhead + ceil(pairs / shards) x s_T(n)) + fixed) / 3600.
The model ignores the spread of lengths (n^2 of the mean <= mean of n^2), file-system and memory-bandwidth
contention between jobs on one node, and queueing behind other users.

--check: the model against what can be measured here: the scoring stage (rule score_shard x k + rule score)
of --check-queries SciFact development queries x 50 candidates through the local single-node SLURM
(scripts/local_slurm.sh, Snakemake's SLURM executor, profiles/slurm) with k = 1, 2, 4 shards of 1 thread
each (the node has 2 CPUs: 4 shards run in 2 waves). Everything before the scoring runs locally first (not
timed). Calibrated on the first run only: a job's fixed cost (its SLURM log's elapsed seconds minus its
inference) and the gather job's seconds. Predicted for every k: compute from the speed model; the executor's
status polls simulated (Poll); SLURM's own start / completion-report delay 0 and 5 s (the sensitivity of a
prediction to it: a finished job seen one poll later costs a whole poll interval).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEED = ROOT / "resources/bench/speed.json"
LENGTHS = (64, 128, 256, 384, 512)

# BEIR's 15 public datasets (the catalogue's names, lockfiles/datasets/beir.json): evaluation queries (test;
# MS MARCO: dev) and mean whitespace words per query and per document.
DATASETS: dict[str, tuple[int, float, float]] = {
    "msmarco": (6980, 5.96, 55.98), "trec-covid": (50, 10.60, 160.77), "nfcorpus": (323, 3.30, 232.26),
    "nq": (3452, 9.16, 78.88), "hotpotqa": (7405, 17.61, 46.30), "fiqa": (648, 10.77, 132.32),
    "arguana": (1406, 192.98, 166.80), "webis-touche2020": (49, 6.55, 292.37),
    "cqadupstack": (13145, 8.59, 129.09), "quora": (10000, 9.53, 11.44), "dbpedia-entity": (400, 5.39, 49.68),
    "scidocs": (1000, 9.38, 176.19), "fever": (6666, 8.13, 84.76), "climate-fever": (1535, 20.13, 84.76),
    "scifact": (300, 12.37, 213.63)}
DATASETS_SOURCE = ("query counts: the README table of beir-cellar/beir; mean word lengths: Thakur et al. "
                   "2021, BEIR, Table 1 (arXiv 2104.08663), read in its reproduction as Table 8 of Ge et "
                   "al., 'Augmenting Zero-Shot Dense Retrievers with Plug-in Mixture-of-Memories' (not in "
                   "the paper itself: check before relying on them). Tokens per word: measured on SciFact.")

MEASURE_CHILD = r"""
import numpy as np
S1 = scoring.ScoringSettings(512, "longest_first", 16, 110, "float32")
pairs = [(queries[q], doc_text[d]) for q in qids for d in ranked[q]]
words = sum(len(a.split()) + len(b.split()) for a, b in pairs)
feats, _ = scoring_batches.encode_pairs(tok, [a for a, _ in pairs], [b for _, b in pairs], 512)
tokens = sum(len(f["input_ids"]) - 3 for f in feats)
long_docs = [(a, (b + " ") * 8) for a, b in pairs[:16]]
out = {"tokens_per_word": round(tokens / words, 4), "pairs_for_ratio": len(pairs), "fits": {}, "points": {}}
for t in ARGS["threads_list"]:
    torch.set_num_threads(t)
    xs, ys = [], []
    for n in ARGS["lengths"]:
        feats, _ = scoring_batches.encode_pairs(tok, [a for a, _ in long_docs], [b for _, b in long_docs], n)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            scoring_model.score_rows(tok, model, [a for a, _ in long_docs], [b for _, b in long_docs], feats)
            best = min(best, time.perf_counter() - t0)
        xs.append(n); ys.append(best / 16)
    A = np.array([[n, n * n] for n in xs], dtype=float)
    (a, b), *_ = np.linalg.lstsq(A, np.array(ys), rcond=None)
    # the scale of real work: the pipeline's batches (tokenise + forward, token-sorted per query, padded)
    real, fitted = 0.0, 0.0
    for q in qids:
        docs = [doc_text[d] for d in ranked[q]]
        fq, _ = scoring_batches.encode_pairs(tok, [queries[q]] * len(docs), docs, 512)
        lengths = [len(f["input_ids"]) for f in fq]
        for plan in scoring_batches.batch_plan(lengths, 16):
            t0 = time.perf_counter()
            scoring_model.score_batch(tok, model, [queries[q]] * len(plan), [docs[i] for i in plan], S1)
            real += time.perf_counter() - t0
            fitted += sum(a * lengths[i] + b * lengths[i] ** 2 for i in plan)
    out["fits"][str(t)] = {"a": float(a), "b": float(b), "real_scale": round(real / fitted, 4)}
    out["points"][str(t)] = {str(n): round(y, 5) for n, y in zip(xs, ys)}
print(json.dumps(out))
"""


def seconds_per_pair(speed: dict, threads: int, n: float) -> float:
    """The fit's seconds per pair of n tokens, times the measured scale of the pipeline's real batches
    (padding inside a batch, tokenisation, Python)."""
    fit = speed["fits"][str(threads)]
    return fit.get("real_scale", 1.0) * (fit["a"] * n + fit["b"] * n * n)


def mean_length(speed: dict, query_words: float, doc_words: float) -> float:
    return min(512.0, (query_words + doc_words) * speed["tokens_per_word"] + 3)


def predict(speed: dict, pairs: int, n: float, threads: int, shards: int, slots: int, overhead: float,
            fixed: float, critical_jobs: int) -> dict:
    """Wall seconds and core-hours of a study's pairs in ``shards`` jobs on ``slots`` parallel slots: the
    scoring stage as the check simulates it (the executor's polls; each job ``overhead`` plus its start-up
    and compute; the gather job ``overhead``), plus the rest of the DAG and the re-inferred batches."""
    per_pair = seconds_per_pair(speed, threads, n)
    compute = math.ceil(pairs / shards) * per_pair
    job = speed["job_start_seconds"] + overhead
    stage = simulated_wall(0.0, job, [compute] * shards, slots, overhead)
    extra = (8 + 2) * 16 * per_pair  # the verification sample and the audit's re-inference
    wall = fixed + critical_jobs * overhead + stage + extra
    return {"wall_seconds": wall, "core_hours": (shards * threads * (job + compute) + fixed + extra) / 3600}


def hms(s: float) -> str:
    return f"{int(s // 3600)}:{int(s % 3600 // 60):02d}:{int(s % 60):02d}"


def table(speed: dict, a) -> str:
    slots = a.nodes * (a.cores // a.job_threads)
    lines = [f"Capacity plan: {a.nodes} node(s) x {a.cores} cores, {a.job_threads} threads per scoring job "
             f"({slots} shards), depth {a.depth}, {a.rerankers} reranker(s); job overhead {a.job_overhead} "
             f"s, rest of the DAG {a.fixed} s over {a.critical_jobs} jobs; speed from {SPEED.name} "
             f"({speed.get('machine', '?')}).", "",
             "| dataset | queries | pairs | mean tokens | wall (h:m:s) | core-hours |",
             "|---|---|---|---|---|---|"]
    total_wall = total_ch = 0.0
    for name, (queries, qw, dw) in DATASETS.items():
        n = mean_length(speed, qw, dw)
        p = predict(speed, queries * a.depth, n, a.job_threads, slots, slots, a.job_overhead, a.fixed,
                    a.critical_jobs)
        wall, ch = p["wall_seconds"] * a.rerankers, p["core_hours"] * a.rerankers
        total_wall, total_ch = total_wall + wall, total_ch + ch
        lines.append(f"| {name} | {queries} | {queries * a.depth * a.rerankers} | {n:.0f} | {hms(wall)} | "
                     f"{ch:.1f} |")
    lines.append(f"| all {len(DATASETS)}, one after another | | | | {hms(total_wall)} | {total_ch:.1f} |")
    return "\n".join(lines) + f"\n\nSources: {DATASETS_SOURCE}"


def measure(a, child) -> int:
    args = {"threads": max(a.threads_list), "threads_list": a.threads_list, "lengths": list(LENGTHS),
            "queries": 4, "rounds": 1, "reps": 1, "seed": 0, "progress": False, "data": a.data,
            "models": a.models}
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = child(MEASURE_CODE, args)  # builds the stand-in into --models when it is missing
    if rc != 0:
        print(buf.getvalue())
        return rc
    res = json.loads(buf.getvalue()[buf.getvalue().index("{"):])
    t0 = time.perf_counter()
    start = subprocess.run([str(ROOT / ".venv/bin/python"), "-c", START_CODE, str(ROOT), a.models],
                           capture_output=True, text=True)
    job_start = time.perf_counter() - t0
    if start.returncode != 0:
        print(start.stderr[-2000:])
        return 1
    res.update(job_start_seconds=round(job_start, 2), machine=f"{os.cpu_count()} CPUs, {os.uname().machine}",
               load_avg=round(os.getloadavg()[0], 2))
    SPEED.parent.mkdir(parents=True, exist_ok=True)
    SPEED.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    print(json.dumps(res, indent=1))
    return 0


START_CODE = r"""
import sys
sys.path.insert(0, sys.argv[1] + "/workflow")
from rerank_study.reranker import numerics
numerics.configure_process()
import torch
from rerank_study.reranker import scoring_model
scoring_model.load_tokenizer(sys.argv[2] + "/bench-standin")
scoring_model.load_model(sys.argv[2] + "/bench-standin")
"""
MEASURE_CODE = ""  # set by bench.py (its COMMON prelude + MEASURE_CHILD)


def parse(rest: list[str]):
    ap = argparse.ArgumentParser(prog="bench.py plan")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--threads-list", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--cores", type=int, default=32)
    ap.add_argument("--job-threads", type=int, default=2)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--rerankers", type=int, default=1)
    ap.add_argument("--job-overhead", type=float, default=15.0, help="SLURM seconds per job "
                                                                     "(--check measures)")
    ap.add_argument("--fixed", type=float, default=120.0, help="the rest of the DAG (bench.py "
                                                               "study measures)")
    ap.add_argument("--critical-jobs", type=int, default=17, help="jobs on the DAG's longest path")
    ap.add_argument("--shards", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    ap.add_argument("--check-queries", type=int, default=20)
    return ap.parse_args(rest)


def local_slurm(env: dict, action: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts/local_slurm.sh"), action], capture_output=True,
                          text=True, env=env, timeout=900)


def check_run(k: int, a, env: dict) -> dict:
    """Prerequisites locally (untimed), then the scoring stage in k one-thread shards through SLURM
    (timed)."""
    wd = ROOT / "bench-plan" / f"shards-{k}"
    shutil.rmtree(wd, ignore_errors=True)
    wd.mkdir(parents=True)
    cfgfile = wd / "check.yaml"
    cfgfile.write_text(f"ce:\n  shards: {k}\n  threads: 1\nsmoke_settings:\n  queries: {a.check_queries}\n"
                       "  depth: 50\n")
    cfg = [f"results={wd / 'results'}", f"resources={wd / 'resources'}", f"data_mirror={a.data}",
           "scorer=stand-in", "smoke=true"]
    snake = [str(ROOT / ".venv/bin/snakemake"), "--configfile", str(cfgfile)]
    pre = subprocess.run([*snake, "--cores", "2", "--omit-from", "score_shard", "--config", *cfg], cwd=ROOT,
                         capture_output=True, text=True, env=env)
    if pre.returncode != 0:
        raise SystemExit(f"the local prerequisites failed:\n{pre.stderr[-3000:]}")
    rundir = wd / "results" / "smoke-standin"
    t0 = time.perf_counter()
    subprocess.run([*snake, "-n", "--config", *cfg, "--", str(rundir / "pairs.tsv")], cwd=ROOT,
                   capture_output=True, text=True, env=env)
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    proc = subprocess.run([*snake, "--profile", str(ROOT / "profiles/slurm"), "--max-threads", "2",
                           "--config", *cfg, "--", str(rundir / "pairs.tsv")], cwd=ROOT, capture_output=True,
                          text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or "submitted with SLURM jobid" not in proc.stderr:
        raise SystemExit(f"the SLURM scoring failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    with open(rundir / "pairs.tsv", encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, line.rstrip("\n").split("\t"))) for line in fh]
    tokens = [int(r["query_tokens"]) + int(r["doc_tokens"]) + 3 for r in rows]
    shards = [json.loads(p.read_text())
              for p in sorted((rundir / "measurements").glob(f"score-of-{k}/*.json"))]
    elapsed = {rule: job_elapsed(rule, t0) for rule in ("score_shard", "score")}
    return {"shards": k, "wall": wall, "tokens": tokens, "startup": startup, "elapsed": elapsed,
            "inference": [m["inference_seconds"] for m in shards]}


# Snakemake's SLURM executor polls job states: first after slurm-init-seconds-before-status-checks (2 s in
# profiles/slurm), then 10 s longer after each check that finds no job finished, at most 180 s, back to the
# first interval after one that does (snakemake-executor-plugin-slurm 2.8.0, check_active_jobs).
POLL_INIT, POLL_STEP, POLL_CAP = 2.0, 10.0, 180.0


class Poll:
    """The executor's status checks from time ``t``: ``seen(ends)`` is when every job ending at ``ends`` has
    been seen finished."""

    def __init__(self, t: float):
        self.t, self.interval = t, POLL_INIT

    def seen(self, ends: list[float]) -> float:
        pending = list(ends)
        while pending:
            self.t += self.interval
            done = [e for e in pending if e <= self.t]
            pending = [e for e in pending if e > self.t]
            self.interval = POLL_INIT if done else min(self.interval + POLL_STEP, POLL_CAP)
        return self.t


def job_elapsed(rule: str, since: float) -> list[float]:
    """Each SLURM job's own elapsed seconds (its Snakemake job step's 'Elapsed time' line), for the jobs of
    ``rule`` whose logs were written after ``since`` (a perf_counter time of this process)."""
    cutoff = time.time() - (time.perf_counter() - since)
    out = []
    for log in (ROOT / ".snakemake/slurm_logs" / f"rule_{rule}").rglob("*.log"):
        if log.stat().st_mtime >= cutoff:
            h, m, sec = log.read_text().rsplit("Elapsed time: ", 1)[1].split()[0].split(":")
            out.append(int(h) * 3600 + int(m) * 60 + float(sec))
    return out


def simulated_wall(start: float, job: float, shard_compute: list[float], slots: int, gather: float,
                   latency: float = 0.0) -> float:
    """The scoring stage through SLURM: all shards submitted at ``start``, run on ``slots`` slots in order
    (each ``job`` seconds of start-up plus its compute), seen by the polls; then the gather job. ``latency``:
    SLURM's own delay to start a queued job and to report a finished one as finished."""
    free = [start] * slots
    ends = []
    for i, c in enumerate(shard_compute):
        s = free.index(min(free))
        free[s] += (latency if i >= slots else 0.0) + job + c
        ends.append(free[s] + latency)
    poll = Poll(start)
    seen = poll.seen(ends)
    return poll.seen([seen + gather + latency])


LATENCY = 5.0  # a plausible SLURM start / completion-report delay: the predictions' sensitivity to it


def check_table(speed: dict, runs: list[dict]) -> list[str]:
    """Calibrated on the first run (its shard job's elapsed seconds minus its inference: a job's fixed cost;
    its gather job's elapsed seconds); every wall predicted from the speed model and the simulated polls."""
    base = runs[0]
    job = max(base["elapsed"]["score_shard"]) - sum(base["inference"]) / base["shards"]
    gather = max(base["elapsed"]["score"])
    lines = [f"a job's fixed cost {job:.1f} s and the gather job {gather:.1f} s (from the "
             f"{base['shards']}-shard run's SLURM logs); Snakemake's start-up per run: its dry run of "
             "the same target", "",
             "| shards | Snakemake start-up s | predicted compute / shard s | measured inference / shard s | "
             f"predicted wall s (SLURM latency 0 / {LATENCY:.0f} s) | the same from the measured inference | "
             "measured wall s | measured / predicted (latency 0) |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        k = r["shards"]
        compute = sum(seconds_per_pair(speed, 1, n) for n in r["tokens"]) / k
        walls = [simulated_wall(r["startup"], job, [compute] * k, 2, gather, lat) for lat in (0.0, LATENCY)]
        measured = sum(r["inference"]) / k
        sched = [simulated_wall(r["startup"], job, r["inference"], 2, gather, lat) for lat in (0.0, LATENCY)]
        lines.append(f"| {k} | {r['startup']:.1f} | {compute:.1f} | {measured:.1f} | {walls[0]:.1f} / "
                     f"{walls[1]:.1f} | {sched[0]:.1f} / {sched[1]:.1f} | {r['wall']:.1f} | "
                     f"{r['wall'] / walls[0]:.3f} |")
    return lines


def check(a, speed: dict) -> int:
    import tempfile

    state = Path(tempfile.mkdtemp(prefix="rerank-study-slurm-", dir="/tmp"))
    state.chmod(0o755)
    env = dict(os.environ, LOCAL_SLURM_STATE=str(state), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    up = local_slurm(env, "up")
    if up.returncode != 0:
        print(f"the local SLURM did not start ({up.returncode}): {up.stderr[-1500:]}")
        return 1
    try:
        env["SLURM_CONF"] = local_slurm(env, "env").stdout.strip().split("=", 1)[1]
        runs = [check_run(k, a, env) for k in a.shards]
    finally:
        local_slurm(env, "down")
        shutil.rmtree(state, ignore_errors=True)
    base = runs[0]
    print(f"check: {len(base['tokens'])} pairs (mean {sum(base['tokens']) / len(base['tokens']):.0f} "
          "tokens), one thread per shard, a node of 2 CPUs; compute from the speed model, the executor's "
          "polls simulated")
    print("\n".join(check_table(speed, runs)))
    return 0


def main(rest: list[str], child, common: str, defaults: dict) -> int:
    a = parse(rest)
    a.data, a.models = defaults["data"], defaults["models"]
    if a.measure:
        global MEASURE_CODE
        MEASURE_CODE = common + "import math\n" + MEASURE_CHILD
        return measure(a, child)
    if not SPEED.exists():
        print(f"no speed measurements at {SPEED}: run `scripts/bench.py plan --measure` first")
        return 1
    speed = json.loads(SPEED.read_text())
    need = 1 if a.check else a.job_threads
    if str(need) not in speed["fits"]:
        print(f"{SPEED} has no measurement at {need} thread(s) (it has {sorted(speed['fits'])}): run "
              f"`scripts/bench.py plan --measure --threads-list {need}` on the node kind the plan is for")
        return 1
    if a.check:
        return check(a, speed)
    print(table(speed, a))
    return 0
