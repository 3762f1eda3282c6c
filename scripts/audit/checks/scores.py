"""Checks of the scores and what is ranked from them: one scored pair per candidate with its batch by
the batching rule, the scorer's label, the CE ranks and blend scores/ranks, the three TREC runs, the
re-inference record and the shape check. A run-file reranker (the anchor's study.reranker_kind: run) has no
pairs, re-inference or shape check: those checks then find none listed (its scores: checks.reranker_run).
Signature: see checks.provenance."""

from __future__ import annotations

import hashlib

from anchor import backend
from core.compare import first_difference, item_at, same_value
from expected.definitions import STANDIN
from read.columns import PAIR_SPECIAL_TOKENS, TREC_RUNS, cell_is
from read.layout import RUN_FILE
from read.readers import plain_number, rows_by_query, text_of

from checks.reranker_run import run_file_pin

NOTHING_INFERRED = ("a run-file reranker (study.reranker_kind: run): nothing was inferred, so the run holds "
                    "no {}; check 'reranker_run' re-derives every score from the pinned run file")


def absent_for_a_run_file(run, au, check: str, *keys: str) -> None:
    """A run-file reranker's run lists none of a cross-encoder's artefacts ``keys`` (a check, not a skip)."""
    for key in keys:
        au.check(check, key not in run.art, str(run.manifest_path),
                 f"{key} (a run-file reranker infers nothing)",
                 "not listed", "listed")
    au.note(check, NOTHING_INFERRED.format(" / ".join(keys)))


def check_pairs(run, want, au) -> None:
    if run.reranker_kind == RUN_FILE:
        return absent_for_a_run_file(run, au, "pairs", "pairs")
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
    order = [(q, d) for q in run.analysed for d in run.cands.get(q, [])]
    au.check("pairs", [(r["qid"], r["doc_id"]) for r in run.pair_rows] == order, f, "row order",
             "the candidates' order (analysed queries, then rank)", "another order")
    _check_token_counts(run, au, f)
    _check_shards(run, want, au)
    # the batching rule, re-implemented from the recorded token counts: per query, the candidates sorted by
    # truncated joint token length min(total_tokens, max_length) descending, ties by rank ascending, cut into
    # consecutive chunks of ce.batch_size; a pair's batch number is its chunk's index
    size = want.anchor.config["ce"]["batch_size"]
    for q, rows in rows_by_query(run.pair_rows).items():
        order = sorted(rows, key=lambda r: (-min(int(r["total_tokens"]), max_len), int(r["r0"])))
        for pos, row in enumerate(order):
            au.check("pairs", int(row["batch"]) == pos // size, f, f"qid {q} doc {row['doc_id']} batch",
                     f"{pos // size} (position {pos} of the token-length order, chunks of {size})",
                     row["batch"])


def shard_tables(want) -> list[str]:
    """The shard tables a run holds (ce.shards of the anchor config): shards/score-of-<N>/<i>.tsv."""
    n = want.anchor.config["ce"]["shards"]
    return [f"shards/score-of-{n}/{i}.tsv" for i in range(n)]


def _check_shards(run, want, au) -> None:
    """pairs.tsv is exactly the rows of its shard tables, each with pairs.tsv's header: no shard table holds
    a row (another logit, another model) the gathered table does not."""
    names, where = shard_tables(want), str(run.rundir / "shards")
    found = sorted(p.relative_to(run.rundir).as_posix() for p in run.rundir.glob("shards/**/*")
                   if not p.is_dir())
    au.check("pairs", found == sorted(names), where, "shard tables (ce.shards)", names, found)
    header, *body = text_of(run.path("pairs")).split("\n")
    rows = []
    for name in names:
        path = run.rundir / name
        if not path.is_file():
            continue
        first, *rest = text_of(path).split("\n")
        au.check("pairs", first == header, str(path), "header", header, first)
        rows += [line for line in rest if line]
    want_rows = sorted(line for line in body if line)
    au.check("pairs", sorted(rows) == want_rows, where, "the shards' rows", "exactly pairs.tsv's "
             f"{len(want_rows)}",
             f"{len(rows)} rows, {len(set(rows) ^ set(want_rows))} not in both")


def _check_token_counts(run, au, f: str) -> None:
    """A query's token count is the same in all its pairs, a document's in every query's, and a pair's total
    is query + document + the template's special tokens."""
    per_query, per_doc = {}, {}
    for i, row in enumerate(run.pair_rows, start=2):
        q, d, item = row["qid"], row["doc_id"], f"qid {row['qid']} doc {row['doc_id']} (line {i})"
        qt, dt = per_query.setdefault(q, row["query_tokens"]), per_doc.setdefault(d, row["doc_tokens"])
        au.check("pairs", row["query_tokens"] == qt, f, item + " query_tokens", f"{qt} (the query's "
                 "other pairs)",
                 row["query_tokens"])
        au.check("pairs", row["doc_tokens"] == dt, f, item + " doc_tokens", f"{dt} (the document's "
                 "other pairs)",
                 row["doc_tokens"])
        total = int(row["query_tokens"]) + int(row["doc_tokens"]) + PAIR_SPECIAL_TOKENS
        au.check("pairs", int(row["total_tokens"]) == total, f, item + " total_tokens",
                 f"{total} (query + document + {PAIR_SPECIAL_TOKENS} special tokens)", row["total_tokens"])


def standin_identity(want) -> tuple[str, str]:
    """(identity, weights sha256) of the STAND-IN the lock folder pins (model_pins.json 'standin': its head
    seed and std, which must be the anchor config's, and every built file's sha256): the identity is
    re-derived here from the files' hashes - sha256 over the sorted lines 'name NUL sha256 LF' - not read from
    the pin."""
    pin = want.anchor.lock("model_pins.json").get("standin")
    if pin is None:
        return "(the lock folder pins no STAND-IN)", "(none)"
    head = want.anchor.config.get("standin", {})
    if (pin.get("head_seed"), pin.get("head_std")) != (head.get("head_seed"), head.get("head_std")):
        return (f"(the pinned STAND-IN has head seed {pin.get('head_seed')}, std "
                f"{pin.get('head_std')})"), "(none)"
    lines = "".join(f"{name}\0{sha}\n" for name, sha in sorted(pin["files"].items()))
    identity = f"{STANDIN}:standin-sha256:{hashlib.sha256(lines.encode('utf-8')).hexdigest()}"
    return identity, pin["files"]["model.safetensors"]


def model_of(run, want) -> tuple[str, str]:
    """(identity, weights sha256) of the run's model, from the lock folder's pins: the pinned model's
    repository at the pinned revision (with the declared relevance logit) and its weights, or the pinned
    STAND-IN's."""
    if run.scorer != "pinned":
        return standin_identity(want)
    ce = want.anchor.lock("model_pins.json")["cross_encoder"]
    index = want.anchor.config.get("study", {}).get("label_index")
    ident = f"{ce['repo']}@{ce['revision']}" + (f"#logit{index}" if index is not None else "")
    return ident, ce["files"][ce["weights"]]["sha256"]


def model_label(run, want) -> str:
    """The manifest's model (identity and weights): the model's, whatever computed the logits."""
    if run.reranker_kind == RUN_FILE:
        return scorer_label(run, want)
    ident, weights = model_of(run, want)
    return f"{ident} weights-sha256:{weights}"


def scorer_label(run, want) -> str:
    """What every pair's model column must say: the scorer's identity and weights, from the lock folder's pins
    - the model's (``model_of``), with the anchor's derived backend and its pinned file sha256 after the
      identity (``backend.scorer_identity``); a run-file reranker: its name and its pinned run file, the
    file's sha256. A run can name no other scorer."""
    if run.reranker_kind == RUN_FILE:
        pin = run_file_pin(run, want)
        return f"{want.settings['study']['reranker']} run:{pin['file']} weights-sha256:{pin['sha256']}"
    ident, weights = model_of(run, want)
    return f"{backend.scorer_identity(want, ident)} weights-sha256:{weights}"


def check_scorer_label(run, want, au) -> None:
    stand_in = run.scorer == STANDIN
    label, mf = scorer_label(run, want), str(run.manifest_path)
    if run.reranker_kind == RUN_FILE:
        au.check("scorer_label", run.scorer == "pinned", mf, "scorer", "pinned (a run file has no stand-in)",
                 run.scorer)
        found = (f"{run.manifest.get('model_identity')} "
                 f"weights-sha256:{run.manifest.get('model_weights_sha256')}")
        au.check("scorer_label", found == label, mf, "model identity and weights (the pinned run file)",
                 label, found)
        return
    au.check("scorer_label", run.scorer in (STANDIN, "pinned"), mf, "scorer", f"{STANDIN} or pinned",
             run.scorer)
    au.check("scorer_label", run.manifest.get("model_identity", "").startswith(f"{STANDIN}:") == stand_in, mf,
             "model_identity", "the STAND-IN label exactly when the scorer is the stand-in",
             run.manifest.get("model_identity"))
    model = model_label(run, want)
    au.check("scorer_label", f"{run.manifest.get('model_identity')} weights-sha256:"
             f"{run.manifest.get('model_weights_sha256')}" == model, mf, "model identity and weights", model,
             run.manifest.get("model_identity"))
    for i, row in enumerate(run.pair_rows, start=2):
        au.check("scorer_label", row["model"] == label, str(run.path("pairs")),
                 f"qid {row['qid']} doc {row['doc_id']} (line {i})", label, row["model"])


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
        logit = run.logits[key[0]][key[1]]
        au.check("blend", cell_is(row["logit"], logit), f, item + " logit", logit, row["logit"])
        r0 = run.cands[key[0]].index(key[1]) + 1
        au.check("blend", int(row["r0"]) == r0, f, item + " r0 (candidate rank)", r0, row["r0"])
        au.check("ce_ranks", int(row["r1"]) == r1[key], f, item + " CE rank", r1[key], int(row["r1"]))
        au.check("blend", cell_is(row["blend_score"], blend_score[key]), f, item + " blend score",
                 blend_score[key], row["blend_score"])
        au.check("blend", int(row["blend_rank"]) == blend_rank[key], f, item + " blend rank",
                 blend_rank[key], int(row["blend_rank"]))
    au.check("blend", seen == set(blend_score), f, "pair set", len(blend_score), len(seen))
    order = [(q, d) for q in run.analysed for d in run.cands.get(q, [])]
    au.check("blend", [(r["qid"], r["doc_id"]) for r in run.ranking_rows] == order, f, "row order",
             "the candidates' order (analysed queries, then rank)", "another order")


def expected_trec_run(run, want, method: str) -> str:
    """A TREC run as the pipeline must write it: per analysed query its order under ``method``, rank r of n
    with the rank-derived score n + 1 - r (no tie left for a tool to re-break), Q0, the method's name as the
    tag."""
    lines = []
    for q in run.analysed:
        docs = want.orders[method][q]
        lines += [f"{q} Q0 {d} {r} {len(docs) + 1 - r} {method}\n" for r, d in enumerate(docs, start=1)]
    return "".join(lines)


def check_runs(run, want, au) -> None:
    """Each TREC run, re-rendered from the recomputed orders and compared line by line, the score as a
    value."""
    for key, method in TREC_RUNS.items():
        path = run.path(key)
        found, expect = text_of(path).splitlines(), expected_trec_run(run, want, method).splitlines()
        i = first_difference(expect, found, same_run_line)
        where = f"every line ({len(expect)})" if i is None else f"line {i + 1}"
        au.check("runs", i is None, str(path), where, item_at(expect, i, "end of file"),
                 item_at(found, i, "end of file"))


def same_run_line(expect: str, found: str) -> bool:
    """Two TREC run lines with the same fields, the score (the fifth) by value."""
    a, b = expect.split(), found.split()
    return (len(a) == len(b) == 6 and a[:4] + a[5:] == b[:4] + b[5:]
            and plain_number(a[4]) == plain_number(b[4]))


def check_verification(run, want, au) -> None:
    """The re-inference record exists, covers exactly the batches the seed names (sample rule
    re-implemented here), and every re-inferred logit equals pairs.tsv bit for bit."""
    if run.reranker_kind == RUN_FILE:
        return absent_for_a_run_file(run, au, "verification", "verification")
    f = str(run.path("verification"))
    rec = run.verification
    seed, k = want.settings["verify_seed"], want.settings["verify_batches"]
    batches = sorted({(r["qid"], int(r["batch"])) for r in run.pair_rows},
                     key=lambda qb: hashlib.sha256(f"{seed}\t{qb[0]}\t{qb[1]}".encode()).hexdigest())
    sample = batches if k is None or k >= len(batches) else batches[:k]
    au.check("verification", same_value(rec["sample"], [list(x) for x in sample]), f,
             f"sample (seed {seed}, k {k})", [list(x) for x in sample], rec["sample"])
    recorded = {(r["qid"], r["doc_id"]): (int(r["batch"]), r["logit"]) for r in run.pair_rows}
    wanted = {(q, d) for (q, d), (b, _) in recorded.items() if (q, b) in set(sample)}
    got = {(p["qid"], p["doc_id"]): p for p in rec["pairs"]}
    au.check("verification", set(got) == wanted and len(rec["pairs"]) == len(wanted), f, "re-inferred pairs",
             f"{len(wanted)} pairs of the sampled batches, each once", f"{len(rec['pairs'])} entries")
    listed = [(p["qid"], p["doc_id"]) for p in rec["pairs"]]
    au.check("verification", listed == sorted(listed), f, "order of the re-inferred pairs",
             "by (qid, doc id) as strings", item_at(listed, first_difference(listed, sorted(listed))))
    for key in sorted(wanted & set(got)):
        p, (batch, logit) = got[key], recorded[key]
        expect = {"qid": key[0], "doc_id": key[1], "batch": batch, "reinferred_batch": batch, "logit": logit,
                  "reinferred_logit": logit, "equal": True}
        au.check("verification", same_value(p, expect), f, f"qid {key[0]} doc {key[1]} batch {batch}", expect,
                 p)
    for name, value in (("seed", seed), ("k", k), ("queries", list(dict.fromkeys(q for q, _ in sample))),
                        ("pairs_compared", len(wanted)), ("all_equal", True)):
        au.check("verification", same_value(rec.get(name), value), f, name, value, rec.get(name))
    au.check("verification", isinstance(rec.get("rule"), str), f, "rule", "the sampling rule's "
             "description (prose)",
             type(rec.get("rule")).__name__)


# what the shape check says of its padding (a constant the pipeline writes: compared exactly)
SHAPE_PADDING = "max_length (this check only; scoring pads to the longest pair of each batch)"


def expected_shapes(run, want, first: str) -> dict:
    """The shape check record of query ``first`` (a shard's first query; the run's first is shape_check.json):
    its first pairs padded to max_length, the pinned architecture's shapes."""
    arch = want.anchor.lock("model_pins.json")["cross_encoder"]["architecture"]
    n, length = min(want.anchor.config["ce"]["shape_check_pairs"],
                    len(run.cands[first])), want.settings["max_length"]
    shapes = {"input_ids": [n, length], "last_hidden_state": [n, length, arch["hidden_size"]],
              "logits": [n, arch["num_labels"]], "hidden_size": arch["hidden_size"], "pairs": n,
              "ok": True, "qid": first, "doc_ids": run.cands[first][:n], "padding": SHAPE_PADDING}
    shapes["expected"] = {k: shapes[k] for k in ("input_ids", "last_hidden_state", "logits")}
    shapes["model"] = scorer_label(run, want)
    return shapes


def check_shape(run, want, au) -> None:
    """The shape check was done on the first query's first pairs, padded to max_length, and found the
    pinned architecture's shapes: input_ids [n, L], last hidden [n, L, hidden], logits [n, num_labels]."""
    if run.reranker_kind == RUN_FILE:
        return absent_for_a_run_file(run, au, "shape_check", "shape_check")
    f, sc = str(run.path("shape_check")), run.shape_check
    for key, val in expected_shapes(run, want, run.analysed[0]).items():
        au.check("shape_check", same_value(sc.get(key), val), f, key, val, sc.get(key))
