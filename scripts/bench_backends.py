"""``bench.py backends``: each scorer of the same pairs (``torch`` = the fp32 model, ``onnx``, ``onnx-int8`` =
the derived files of rerank_study.reranker.backends, made from the STAND-IN and verified against
lockfiles/derived_pins.json) in ONE child process of its own, one after the other, on the same threads:

  * seconds: round 0 (warm-up), then ``--rounds`` timed rounds of every pair; the best; pairs/s; the speed
    ratio = torch's best seconds / the backend's (> 1: faster than the fp32 torch path);
  * peak RSS of the child after the timed rounds (only that scorer is loaded);
  * determinism: float32-bit mismatches of the first two queries' logits at 1, 2 and 4 threads (a new
    session or thread count each) and of every timed round, against round 0;
  * ``--retention``: the whole development split (100 queries x 50 candidates; one round each), then the
    conclusion retention of each backend against this machine's torch logits (rerank_study.repro.retention:
    per-query tau-b, top-10 overlap, largest |delta logit|; both studies' primary mean and grouped interval,
    the grouped paired interval of the difference, every verdict and guardrail unchanged or not).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("torch", "onnx", "onnx-int8")

CHILD = r"""
import numpy as np
from rerank_study.reranker import backend_session, backends

backend = ARGS["backend"]
arch = mp["cross_encoder"]["architecture"]


def scorer(threads):
    if backend == "torch":
        torch.set_num_threads(threads)
        return scoring_model.load_model(folder)
    data, _ = backends.ready(folder, backend, arch, sys.argv[1] + "/lockfiles/derived_pins.json",
                             ARGS["models"] + f"/bench-standin-{backend}/" + backends.FILE)
    return backend_session.OrtClassifier(data, threads)


def score(model, which):
    rows, _ = scoring.score_run({q: ranked[q] for q in which}, queries, doc_text, tok, lambda: model, S,
                                "bench",
                                {}, None, after_query=numerics.malloc_trim, fresh=True)
    return rows


def bits(rows):
    return np.asarray([r["logit"] for r in rows], dtype=np.float32).tobytes()


t0 = time.perf_counter()
model = scorer(ARGS["threads"])
load = time.perf_counter() - t0
t0 = time.perf_counter(); rows0 = score(model, qids); warm = time.perf_counter() - t0
secs, repeated = [], 0
for _ in range(ARGS["rounds"]):
    t0 = time.perf_counter(); again = score(model, qids); secs.append(time.perf_counter() - t0)
    repeated += int(np.sum(np.frombuffer(bits(again), np.uint32) != np.frombuffer(bits(rows0), np.uint32)))
rss = rss_mib()  # before the determinism sessions below
few = qids[:2]
base = bits(score(model, few))
threads = {}
for t in (1, 2, 4):
    threads[str(t)] = int(np.sum(np.frombuffer(bits(score(scorer(t), few)), np.uint32)
                                 != np.frombuffer(base, np.uint32)))
best = min(secs) if secs else warm
json.dump({"backend": backend, "pairs": len(rows0), "load_seconds": round(load, 2),
           "warm_seconds": round(warm, 2),
           "round_seconds": [round(x, 2) for x in secs], "best_seconds": round(best, 3),
           "pairs_per_second": round(len(rows0) / best, 2), "peak_rss_mib": round(rss, 1),
           "mismatches_at_threads": threads, "determinism_pairs": len(base) // 4,
           "mismatches_over_rounds": repeated, "threads": ARGS["threads"],
           "logits": {q: {r["doc_id"]: r["logit"] for r in rows0 if r["qid"] == q} for q in qids}},
          open(ARGS["out"], "w"))
"""


def run_child(data_code: str, args: dict, backend: str, out: Path) -> dict:
    code = data_code + CHILD
    res = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), json.dumps({**args, "backend": backend, "out": str(out)})]
    )
    if res.returncode != 0:
        raise SystemExit(f"the {backend} child failed ({res.returncode})")
    return json.loads(out.read_text(encoding="utf-8"))


def speed_table(res: dict) -> list[str]:
    t = res["torch"]["best_seconds"]
    lines = [
        "| backend | best s | ratio to torch | pairs/s | peak RSS MiB | mismatches at 1/2/4 threads | "
        "mismatches over rounds |",
        "|---|---|---|---|---|---|---|",
    ]
    for b, r in res.items():
        th = "/".join(str(r["mismatches_at_threads"][k]) for k in ("1", "2", "4"))
        lines.append(
            f"| {b} | {r['best_seconds']:.2f} | {t / r['best_seconds']:.3f} | {r['pairs_per_second']:.1f} | "
            f"{r['peak_rss_mib']:.0f} | {th} of {r['determinism_pairs']} | {r['mismatches_over_rounds']} |"
        )
    return lines


def retention_rows(res: dict, data: Path) -> list[str]:
    sys.path.insert(0, str(ROOT / "workflow"))
    from rerank_study.data import beir
    from rerank_study.rankings import candidates
    from rerank_study.repro import retention
    from rerank_study.settings.config import load_config, run_settings
    from rerank_study.stats import analysis
    from rerank_study.stats.grouping import evidence_groups

    cfg = load_config(ROOT / "config" / "config.yaml")
    qids = list(res["torch"]["logits"])
    cands = candidates.read_candidates(ROOT / "lockfiles" / "candidates" / "candidates.tsv")
    qrels = beir.read_qrels(data / "qrels" / "train.tsv")
    plan = analysis.AnalysisPlan.from_settings(run_settings(cfg))
    groups = evidence_groups(qids, qrels)
    table = {
        b: retention.method_table(qids, cands, r["logits"], qrels, cfg["metrics"], cfg["blend"]["k"])
        for b, r in res.items()
    }
    lines = [
        "| backend | primary mean (interval) | its Δ − torch's Δ (grouped interval) | verdicts changed | "
        "τ-b min / median | top-10 overlap min / mean | max abs Δ logit |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in res:
        c = retention.conclusion(qids, groups, table["torch"], table[b], plan, cfg["evalstats"]["guardrails"])
        agree = retention.logit_agreement(qids, res["torch"]["logits"], res[b]["logits"])
        o, d = c["other"], c["difference"]
        lines.append(
            f"| {b} | {o['primary_mean']:.4f} ({o['grouped_interval'][0]:.4f}, "
            f"{o['grouped_interval'][1]:.4f}) | {d['mean']:+.5f} ({d['grouped_interval'][0]:+.5f}, "
            f"{d['grouped_interval'][1]:+.5f}) | {', '.join(c['verdicts_changed']) or 'none'} | "
            f"{agree['kendall_tau_b']['min']:.3f} / {agree['kendall_tau_b']['median']:.3f} | "
            f"{agree['top10_overlap']['min']:.1f} / {agree['top10_overlap']['mean']:.3f} | "
            f"{agree['max_abs_delta_logit']:.2e} |"
        )
    return lines


def main(a, data_code: str, args: dict) -> int:
    if not (Path(args["data"]) / "corpus.jsonl").exists():
        print(f"no SciFact data at {args['data']}: pass --data ../shared/data/scifact")
        return 1
    if a.retention:
        args = {**args, "queries": 100, "rounds": 0}
    Path(args["models"]).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        res = {b: run_child(data_code, args, b, Path(tmp) / f"{b}.json") for b in NAMES}
    print(
        f"{args['queries']} development queries x 50 candidates, {args['threads']} threads, "
        f"{args['rounds']} timed rounds after a warm-up (best shown)"
    )
    print("\n".join(speed_table(res)))
    if a.retention:
        print("\nconclusion retention against this machine's fp32 torch logits (same pairs, same batches):")
        print("\n".join(retention_rows(res, Path(args["data"]))))
    return 0
