"""Checks of the scores and what is ranked from them: one scored pair per candidate with its batch by
the batching rule, the scorer's label, the CE ranks and blend scores/ranks, the three TREC runs, the
re-inference record and the shape check. Signature: see checks_provenance."""

from __future__ import annotations

import hashlib

from definitions import METHODS, STANDIN
from readers import rows_by_query


def check_pairs(run, want, au) -> None:
    f, max_len = str(run.path("pairs")), want.settings["max_length"]
    seen = set()
    for i, row in enumerate(run.pair_rows, start=2):
        q, d = row["qid"], row["doc_id"]
        item = f"qid {q} doc {d} (line {i})"
        au.check("pairs", (q, d) not in seen, f, item, "one row per pair", "duplicate")
        seen.add((q, d))
        lst = run.cands.get(q, [])
        rank = lst.index(d) + 1 if d in lst else None
        au.check("pairs", rank is not None and int(row["r0"]) == rank, f, item, rank, row["r0"])
        au.check("pairs", (row["truncated"] == "true") == (int(row["total_tokens"]) > max_len), f, item,
                 f"truncated == total_tokens > {max_len}", f"{row['truncated']} with {row['total_tokens']}")
    for q in run.analysed:
        for d in run.cands.get(q, []):
            au.check("pairs", (q, d) in seen, f, f"qid {q} doc {d}", "a scored pair", "missing")
    # the batching rule, re-implemented from the recorded token counts: per query, the candidates sorted by
    # truncated joint token length min(total_tokens, max_length) descending, ties by rank ascending, cut into
    # consecutive chunks of ce.batch_size; a pair's batch number is its chunk's index
    size = want.anchor.config["ce"]["batch_size"]
    for q, rows in rows_by_query(run.pair_rows).items():
        order = sorted(rows, key=lambda r: (-min(int(r["total_tokens"]), max_len), int(r["r0"])))
        for pos, row in enumerate(order):
            au.check("pairs", int(row["batch"]) == pos // size, f, f"qid {q} doc {row['doc_id']} batch",
                     f"{pos // size} (position {pos} of the token-length order, chunks of {size})", row["batch"])


def check_scorer_label(run, want, au) -> None:
    stand_in = run.scorer == STANDIN
    for i, row in enumerate(run.pair_rows, start=2):
        au.check("scorer_label", (STANDIN in row["model"]) == stand_in, str(run.path("pairs")),
                 f"qid {row['qid']} doc {row['doc_id']} (line {i})",
                 "STAND-IN label" if stand_in else "pinned model identity", row["model"][:60])


def check_rankings(run, want, au) -> None:
    """CE ranks and blend scores/ranks in rankings.tsv (checks 'ce_ranks' and 'blend')."""
    r1, blend_score, blend_rank = want.r1, want.blend_score, want.blend_rank
    f, seen = str(run.path("rankings")), set()
    for row in run.ranking_rows:
        key = (row["qid"], row["doc_id"])
        seen.add(key)
        item = f"qid {key[0]} doc {key[1]}"
        if key not in blend_score:
            au.check("blend", False, f, item, "a pair of the run", "unknown pair")
            continue
        au.check("blend", float(row["logit"]) == run.logits[key[0]][key[1]], f, item + " logit",
                 run.logits[key[0]][key[1]], float(row["logit"]))
        au.check("ce_ranks", int(row["r1"]) == r1[key], f, item + " CE rank", r1[key], int(row["r1"]))
        au.check("blend", float(row["blend_score"]) == blend_score[key], f, item + " blend score",
                 blend_score[key], float(row["blend_score"]))
        au.check("blend", int(row["blend_rank"]) == blend_rank[key], f, item + " blend rank",
                 blend_rank[key], int(row["blend_rank"]))
    au.check("blend", seen == set(blend_score), f, "pair set", len(blend_score), len(seen))


def check_runs(run, want, au) -> None:
    for m in METHODS:
        key = f"run_{m}"
        f, trec = str(run.path(key)), run.trec_run(key)
        au.check("runs", list(trec) == run.analysed, f, "query order", len(run.analysed), len(trec))
        for q in run.analysed:
            got = trec.get(q, [])
            au.check("runs", [d for d, _, _ in got] == want.orders[m][q], f, f"qid {q} order",
                     want.orders[m][q][:5], [d for d, _, _ in got][:5])
            scores = [float(s) for _, _, s in got]
            ok = ([r for _, r, _ in got] == list(range(1, len(got) + 1))
                  and all(a > b for a, b in zip(scores, scores[1:])))
            au.check("runs", ok, f, f"qid {q} ranks/scores", "ranks 1..n with strictly decreasing scores", "not so")


def check_verification(run, want, au) -> None:
    """The re-inference record exists, covers exactly the batches the seed names (sample rule
    re-implemented here), and every re-inferred logit equals pairs.tsv bit for bit."""
    f = str(run.path("verification"))
    rec = run.verification
    seed, k = want.settings["verify_seed"], want.settings["verify_batches"]
    batches = sorted({(r["qid"], int(r["batch"])) for r in run.pair_rows},
                     key=lambda qb: hashlib.sha256(f"{seed}\t{qb[0]}\t{qb[1]}".encode("utf-8")).hexdigest())
    sample = batches if k is None or k >= len(batches) else batches[:k]
    au.check("verification", [tuple(x) for x in rec["sample"]] == sample, f, f"sample (seed {seed}, k {k})",
             [list(x) for x in sample], rec["sample"])
    recorded = {(r["qid"], r["doc_id"]): (int(r["batch"]), r["logit"]) for r in run.pair_rows}
    wanted = {(q, d) for (q, d), (b, _) in recorded.items() if (q, b) in set(sample)}
    got = {(p["qid"], p["doc_id"]): p for p in rec["pairs"]}
    au.check("verification", set(got) == wanted, f, "re-inferred pairs", f"{len(wanted)} pairs of the sampled batches",
             f"{len(got)} pairs")
    for key in sorted(wanted & set(got)):
        p, (batch, logit) = got[key], recorded[key]
        ok = (p["batch"] == batch and p["reinferred_batch"] == batch and p["equal"] is True
              and p["reinferred_logit"] is not None and float(p["reinferred_logit"]) == float(logit)
              and float(p["logit"]) == float(logit))
        au.check("verification", ok, f, f"qid {key[0]} doc {key[1]} batch {batch}", logit,
                 p.get("reinferred_logit"))
    au.check("verification", rec["all_equal"] is True, f, "all_equal", True, rec["all_equal"])


def check_shape(run, want, au) -> None:
    """The shape check was done on the first query's first pairs, padded to max_length, and found the
    pinned architecture's shapes: input_ids [n, L], last hidden [n, L, hidden], logits [n, num_labels]."""
    f, sc = str(run.path("shape_check")), run.shape_check
    arch = want.anchor.lock("model_pins.json")["cross_encoder"]["architecture"]
    first = run.analysed[0]
    n, length = min(want.anchor.config["ce"]["shape_check_pairs"], len(run.cands[first])), want.settings["max_length"]
    want_shapes = {"input_ids": [n, length], "last_hidden_state": [n, length, arch["hidden_size"]],
                   "logits": [n, arch["num_labels"]], "hidden_size": arch["hidden_size"], "pairs": n, "ok": True,
                   "qid": first, "doc_ids": run.cands[first][:n]}
    for key, val in want_shapes.items():
        au.check("shape_check", sc.get(key) == val, f, key, val, sc.get(key))
