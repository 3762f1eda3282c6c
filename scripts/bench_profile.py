"""bench.py profile: useful-FLOP utilisation of the strict-mode sgemm ceiling per stage (prints; asserts
nothing).

    .venv/bin/python scripts/bench.py profile [--queries 4] [--threads 2] [--data ../shared/data/scifact]

ONE child process, in the scoring contract's numeric mode (strict CNR), on the first --queries
development queries x 50 candidates with the stand-in: one warm pass of the pipeline path
(rerank_study.reranker.scoring.score_run), then one pass under torch.profiler (CPU). Stages by the inclusive
time of
the top-level operator each nn module calls (children included: addmm's bias copy is the linear stage's):
  linear      aten::linear (the Q, K, V, O projections, the two FFN products, pooler and classifier);
  attention   aten::scaled_dot_product_attention (QK^T, mask, softmax, PV; transformers' sdpa path);
  rest        the profiled wall minus both: embeddings, LayerNorm, GELU, residual adds, tokenisation, Python.
Useful FLOPs per stage (real tokens, no padding): linear 6 x 2 n (4 h^2 + 2 h f), attention 6 x 4 n^2 h per
pair (scoring.useful_flops splits into these two). Utilisation = useful FLOPs / stage seconds / ceiling, with
the ceiling = best torch.mm (5632x384) @ (384x1536) in the same mode.

The limit bit-identity with upstream imposes on the linear stage: the same GEMM calls (same shapes, same
order of accumulation, strict CNR, fp32) as upstream's BertModel forward. `linear_replay` times exactly those
calls alone (torch.addmm on random data of each batch's padded shapes): linear seconds / replay seconds says
how close the stage is to what its own GEMMs cost; replay utilisation says what the shapes allow.
"""

from __future__ import annotations

PROFILE_CHILD = r"""
import numpy as np
from torch.profiler import ProfilerActivity, profile

H, F, L = 384, 1536, 6
enc = scoring_batches.PairEncoder(tok, 512)
batches = []  # (rows, padded length, real lengths)
for q in ranked:
    docs = [doc_text[d] for d in ranked[q]]
    feats, _ = enc.pairs([queries[q]] * len(docs), docs)
    lengths = [len(f["input_ids"]) for f in feats]
    for b in scoring_batches.batch_plan(lengths, 16):
        batches.append((len(b), max(lengths[i] for i in b), [lengths[i] for i in b]))
real = [n for _, _, ns in batches for n in ns]
useful = {"linear": sum(L * 2.0 * n * (4 * H * H + 2 * H * F) for n in real),
          "attention": sum(L * 4.0 * n * n * H for n in real)}


def ours():
    scoring.score_run(ranked, queries, doc_text, tok, lambda: model, S, "bench", {}, None)


def sgemm_ceiling(reps=20):
    a, b, c = torch.randn(5632, H), torch.randn(H, F), torch.empty(5632, F)
    ts = []
    for _ in range(reps + 3):
        t0 = time.perf_counter(); torch.mm(a, b, out=c); ts.append(time.perf_counter() - t0)
    return 2.0 * 5632 * H * F / min(ts[3:]) / 1e9


def linear_replay():
    t = 0.0
    for rows, n, _ in batches:
        m = rows * n
        x, y = torch.randn(m, H), torch.randn(m, F)
        wq, w1, w2 = torch.randn(H, H), torch.randn(F, H), torch.randn(H, F)
        bh, bf = torch.randn(H), torch.randn(F)
        t0 = time.perf_counter()
        for _ in range(L):
            for _ in range(4):
                torch.addmm(bh, x, wq.t())
            torch.addmm(bf, x, w1.t())
            torch.addmm(bh, y, w2.t())
        t += time.perf_counter() - t0
    return t


ours()  # warm
ceiling = sgemm_ceiling()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    t0 = time.perf_counter(); ours(); wall = time.perf_counter() - t0
events = {ev.key: ev for ev in prof.key_averages()}
total = {k: events[k].cpu_time_total / 1e6 if k in events else 0.0
         for k in ("aten::linear", "aten::scaled_dot_product_attention")}
secs = {"linear": total["aten::linear"], "attention": total["aten::scaled_dot_product_attention"]}
secs["rest"] = wall - secs["linear"] - secs["attention"]
ops = {k: ev.self_cpu_time_total / 1e6 for k, ev in events.items() if k.startswith("aten::")}
replay = min(linear_replay() for _ in range(2))
padded = sum(L * 2.0 * rows * n * (4 * H * H + 2 * H * F) for rows, n, _ in batches)
res = {"pairs": len(real), "batches": len(batches), "threads": torch.get_num_threads(),
       "numerics": MODE["mkl_cnr"],
       "load_avg_start_end": [ARGS["load"], round(os.getloadavg()[0], 2)],
       "sgemm_ceiling_gflops": round(ceiling, 1), "profiled_wall_seconds": round(wall, 2),
       "stages": {}, "top_operators_self_seconds": {k: round(v, 3) for k, v in
                                               sorted(ops.items(), key=lambda kv: -kv[1])[:12]},
       "linear_replay": {"seconds": round(replay, 2),
                         "utilisation_of_ceiling_useful": round(useful["linear"] / replay / 1e9 / ceiling, 3),
                         "utilisation_of_ceiling_padded": round(padded / replay / 1e9 / ceiling, 3),
                         "linear_stage_over_replay": round(secs["linear"] / replay, 3)}}
for name, s in secs.items():
    fl = useful.get(name, 0.0)
    res["stages"][name] = {"seconds": round(s, 2), "share_of_profiled_time": round(s / sum(secs.values()), 3),
                           "useful_gflop": round(fl / 1e9, 1),
                           "utilisation_of_ceiling": round(fl / s / 1e9 / ceiling, 3) if fl and s else None}
print(json.dumps(res))
"""
