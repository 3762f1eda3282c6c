#!/usr/bin/env python3
"""Independent audit of a finished run — Python standard library only.

    python scripts/audit.py results/<run> [--lockdir lockfiles] [--out results/<run>/audit.json]

It imports nothing from the project and shares no code with it: every definition below is
re-implemented from the written definitions (README / SOURCE_MAP), so an error in the
pipeline's code is not repeated here. It recomputes, from the candidates, the per-pair logits
and the qrels: CE ranks, blend scores and ranks, every per-query metric of the three methods,
the evidence groups, every bootstrap replicate of both schemes and all comparisons from the
saved index matrices, the interval endpoints, means, W/T/L, the leave-one-group-out range and
the report's numbers; and it checks every artefact hash against the manifest and the pins
against the lockfiles, and the confirmation seal.

Exit status 0 when every check passes; 1 when any check fails (each failure names the check,
file, item and expected vs found); 2 when the run folder cannot be audited at all.
Floats are compared EXACTLY: the pipeline writes shortest round-trip text and both sides add
in the documented order (group sums in group order, replicate sums in draw order).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

MAX_FAILURES_SHOWN = 20
METHODS = ("rrf", "ce", "blend")


# ----------------------------------------------------------------------------- bookkeeping --
class Audit:
    def __init__(self):
        self.checks: dict[str, dict] = {}

    def check(self, name: str, ok: bool, file: str, item: str = "", expected=None, found=None) -> bool:
        c = self.checks.setdefault(name, {"checked": 0, "failures": []})
        c["checked"] += 1
        if not ok:
            c["failures"].append({"file": file, "item": item, "expected": _jsonable(expected),
                                  "found": _jsonable(found)})
        return ok

    def note(self, name: str, text: str) -> None:
        self.checks.setdefault(name, {"checked": 0, "failures": []})["note"] = text

    @property
    def failed(self):
        return [n for n, c in self.checks.items() if c["failures"]]


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, (set, tuple)):
        return sorted(x) if isinstance(x, set) else list(x)
    return x


class Unauditable(Exception):
    pass


# --------------------------------------------------------------------------------- reading --
def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_table(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].rstrip("\r").split("\t")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.rstrip("\r").split("\t")
        if len(cells) != len(header):
            raise Unauditable(f"{path} line {i}: {len(cells)} cells, header has {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def read_ids(path: Path) -> list[str]:
    return [l for l in path.read_text(encoding="utf-8").split("\n") if l]


def read_run(path: Path) -> dict[str, list[tuple[str, int, str]]]:
    out: dict[str, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _q0, d, r, s, _tag = line.split()
        out.setdefault(q, []).append((d, int(r), s))
    return out


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in read_table(path):
        out.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return out


# ------------------------------------------------------------ definitions, re-implemented --
def tie_rule_order(scores: dict[str, float]) -> list[str]:
    """Score descending; ties by document id compared as strings, descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def ndcg(order: list[str], rels: dict[str, int], k: int) -> float:
    """trec_eval ndcg_cut: linear gain, log2(i+2) discount, ideal from all judged relevant docs."""
    dcg = 0.0
    for i, d in enumerate(order[:k]):
        g = rels.get(d, 0)
        if g > 0:
            dcg += g / math.log2(i + 2)
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = 0.0
    for i, g in enumerate(ideal):
        idcg += g / math.log2(i + 2)
    return dcg / idcg if idcg > 0 else 0.0


def recall(order: list[str], rels: dict[str, int], k: int) -> float:
    positives = {d for d, g in rels.items() if g > 0}
    return len(positives & set(order[:k])) / len(positives)


def first_rel(order: list[str], rels: dict[str, int]):
    for i, d in enumerate(order, start=1):
        if rels.get(d, 0) > 0:
            return i
    return None


def mrr(order: list[str], rels: dict[str, int], k: int) -> float:
    r = first_rel(order[:k], rels)
    return 0.0 if r is None else 1.0 / r


def components(qids: list[str], qrels: dict[str, dict[str, int]]) -> list[list[str]]:
    """Connected components by breadth-first search over 'shares a relevant document'."""
    by_doc: dict[str, list[str]] = {}
    for q in qids:
        for d, g in qrels.get(q, {}).items():
            if g > 0:
                by_doc.setdefault(d, []).append(q)
    seen, comps = set(), []
    for q in qids:
        if q in seen:
            continue
        comp, frontier = {q}, [q]
        seen.add(q)
        while frontier:
            cur = frontier.pop()
            for d, g in qrels.get(cur, {}).items():
                if g <= 0:
                    continue
                for other in by_doc[d]:
                    if other not in seen:
                        seen.add(other)
                        comp.add(other)
                        frontier.append(other)
        comps.append([x for x in qids if x in comp])
    return comps


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between order statistics (Hyndman-Fan type 7), evaluated as
    numpy does: h = (n-1)*(p/100); a + (b-a)*t, or b - (b-a)*(1-t) when t >= 0.5."""
    xs = sorted(values)
    h = (len(xs) - 1) * (p / 100)
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    t = h - lo
    a, b = xs[lo], xs[hi]
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def seq_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


# ------------------------------------------------------------------------------ the audit --
def resolve(path_text: str, base: Path) -> Path:
    p = Path(path_text)
    return p if p.is_absolute() else base / p


def audit_run(rundir: Path, lockdir: Path | None, au: Audit) -> dict:
    t0 = time.perf_counter()
    manifest_path = rundir / "manifest.json"
    if not manifest_path.exists():
        raise Unauditable(f"{manifest_path} does not exist: not a finished run")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    settings = manifest["settings"]
    if lockdir is None:
        lockdir = resolve(manifest["lockdir"], rundir)
    art = {a["key"]: a for a in manifest["artefacts"]}

    def path_of(key):
        return resolve(art[key]["path"], rundir)  # every manifest path is relative to the run folder

    # 1. hashes against the manifest -----------------------------------------------------
    for key, a in art.items():
        p = path_of(key)
        if not p.exists():
            au.check("manifest_hashes", False, str(p), key, a["sha256"], "missing file")
            continue
        au.check("manifest_hashes", sha256_of(p) == a["sha256"], str(p), key, a["sha256"], sha256_of(p))

    # 2. pins against the lockfiles ------------------------------------------------------
    data_pins = json.loads((lockdir / "data_pins.json").read_text(encoding="utf-8"))["files"]
    derived = json.loads((lockdir / "derived_pins.json").read_text(encoding="utf-8"))
    kind = manifest.get("kind", "development")
    for key, pin_name in (("corpus", "corpus.jsonl"), ("queries", "queries.jsonl"), ("qrels_dev", "qrels/train.tsv")):
        if key in art:
            au.check("lockfile_pins", art[key]["sha256"] == data_pins[pin_name]["sha256"], str(path_of(key)), key,
                     data_pins[pin_name]["sha256"], art[key]["sha256"])
    if "qrels_confirm" in art:
        au.check("lockfile_pins", art["qrels_confirm"]["sha256"] == data_pins["qrels/test.tsv"]["sha256"],
                 str(path_of("qrels_confirm")), "qrels_confirm", data_pins["qrels/test.tsv"]["sha256"],
                 art["qrels_confirm"]["sha256"])
    for key, pin in (("split_dev", derived["splits"]["dev"]), ("split_confirm", derived["splits"]["confirm"])):
        au.check("lockfile_pins", art[key]["sha256"] == pin["sha256"], str(path_of(key)), key, pin["sha256"],
                 art[key]["sha256"])
        lock_list = lockdir / pin["path"]
        au.check("lockfile_pins", sha256_of(lock_list) == pin["sha256"], str(lock_list), key, pin["sha256"],
                 sha256_of(lock_list))
    au.check("lockfile_pins", art["candidates"]["sha256"] == derived["candidates"]["sha256"],
             str(path_of("candidates")), "candidates", derived["candidates"]["sha256"], art["candidates"]["sha256"])
    if kind == "confirmation":
        sha_file = lockdir / "protocol.sha256"
        frozen = sha_file.read_text(encoding="utf-8").split()[0] if sha_file.exists() else None
        au.check("lockfile_pins", frozen is not None and frozen == manifest.get("protocol_sha256"), str(sha_file),
                 "frozen protocol", frozen, manifest.get("protocol_sha256"))
        if frozen is not None:
            au.check("lockfile_pins", sha256_of(lockdir / "protocol.json") == frozen, str(lockdir / "protocol.json"),
                     "protocol.json sha256", frozen, sha256_of(lockdir / "protocol.json"))
    model_pins = json.loads((lockdir / "model_pins.json").read_text(encoding="utf-8"))["cross_encoder"]
    if manifest["scorer"] == "pinned":
        au.check("lockfile_pins", manifest["model_weights_sha256"] == model_pins["files"]["model.safetensors"]["sha256"],
                 str(manifest_path), "model weights", model_pins["files"]["model.safetensors"]["sha256"],
                 manifest["model_weights_sha256"])

    # 3. analysed queries and candidates ---------------------------------------------------
    split_dev = read_ids(path_of("split_dev"))
    split_confirm = read_ids(path_of("split_confirm"))
    analysed = read_ids(path_of("run_queries"))
    pool = split_confirm if kind == "confirmation" else split_dev
    n_expected = settings["n_queries"] or len(pool)
    au.check("analysed_queries", analysed == pool[:n_expected], str(path_of("run_queries")), "query list",
             f"first {n_expected} of the pinned {'confirmation' if kind == 'confirmation' else 'development'} split",
             f"{len(analysed)} ids" if analysed != pool[:n_expected] else "same")
    depth = settings["depth"]
    frozen: dict[str, list[str]] = {}
    for row in read_table(path_of("candidates")):
        frozen.setdefault(row["qid"], []).append(row["doc_id"])
    cand_rows = read_table(path_of("run_candidates"))
    cands: dict[str, list[str]] = {}
    for row in cand_rows:
        lst = cands.setdefault(row["qid"], [])
        au.check("candidates", int(row["rank"]) == len(lst) + 1, str(path_of("run_candidates")),
                 f"qid {row['qid']} doc {row['doc_id']}", len(lst) + 1, int(row["rank"]))
        lst.append(row["doc_id"])
    au.check("candidates", list(cands) == analysed, str(path_of("run_candidates")), "query set", len(analysed),
             len(cands))
    for q in analysed:
        lst = cands.get(q, [])
        au.check("candidates", len(lst) == depth, str(path_of("run_candidates")), f"qid {q} list length", depth, len(lst))
        dups = sorted({d for d in lst if lst.count(d) > 1})
        au.check("candidates", not dups, str(path_of("run_candidates")), f"qid {q} duplicate doc ids", [], dups)
        au.check("candidates", lst == frozen.get(q, [])[:depth], str(path_of("run_candidates")),
                 f"qid {q} vs frozen top-{depth}", frozen.get(q, [])[:depth], lst)

    # 4. pairs (logits) --------------------------------------------------------------------
    logits: dict[str, dict[str, float]] = {}
    max_len = settings["max_length"]
    for i, row in enumerate(read_table(path_of("pairs")), start=2):
        q, d = row["qid"], row["doc_id"]
        item = f"qid {q} doc {d} (line {i})"
        au.check("pairs", d not in logits.get(q, {}), str(path_of("pairs")), item, "one row per pair", "duplicate")
        logits.setdefault(q, {})[d] = float(row["logit"])
        rank = cands.get(q, []).index(d) + 1 if d in cands.get(q, []) else None
        au.check("pairs", rank is not None and int(row["r0"]) == rank, str(path_of("pairs")), item, rank, row["r0"])
        au.check("pairs", (row["truncated"] == "true") == (int(row["total_tokens"]) > max_len), str(path_of("pairs")),
                 item, f"truncated == total_tokens > {max_len}", f"{row['truncated']} with {row['total_tokens']}")
        stand_in = manifest["scorer"] == "STAND-IN"
        au.check("scorer_label", ("STAND-IN" in row["model"]) == stand_in, str(path_of("pairs")), item,
                 "STAND-IN label" if stand_in else "pinned model identity", row["model"][:60])
    for q in analysed:
        for d in cands.get(q, []):
            au.check("pairs", d in logits.get(q, {}), str(path_of("pairs")), f"qid {q} doc {d}", "a scored pair",
                     "missing")

    # 5. CE ranks, blend, runs ---------------------------------------------------------------
    k_blend = settings["blend_k"]
    orders = {m: {} for m in METHODS}
    blend_score, r1_of, blend_rank = {}, {}, {}
    for q in analysed:
        if q not in logits or set(logits[q]) != set(cands.get(q, [])):
            continue  # reported above
        orders["rrf"][q] = cands[q]
        ce_order = tie_rule_order(logits[q])
        orders["ce"][q] = ce_order
        r1 = {d: i for i, d in enumerate(ce_order, start=1)}
        s = {d: 1.0 / (k_blend + (cands[q].index(d) + 1)) + 1.0 / (k_blend + r1[d]) for d in cands[q]}
        orders["blend"][q] = tie_rule_order(s)
        for d in cands[q]:
            blend_score[(q, d)], r1_of[(q, d)] = s[d], r1[d]
        for i, d in enumerate(orders["blend"][q], start=1):
            blend_rank[(q, d)] = i
    rk_path = path_of("rankings")
    seen = set()
    for row in read_table(rk_path):
        key = (row["qid"], row["doc_id"])
        seen.add(key)
        item = f"qid {key[0]} doc {key[1]}"
        if key not in blend_score:
            au.check("blend", False, str(rk_path), item, "a pair of the run", "unknown pair")
            continue
        au.check("blend", float(row["logit"]) == logits[key[0]][key[1]], str(rk_path), item + " logit",
                 logits[key[0]][key[1]], float(row["logit"]))
        au.check("ce_ranks", int(row["r1"]) == r1_of[key], str(rk_path), item + " CE rank", r1_of[key], int(row["r1"]))
        au.check("blend", float(row["blend_score"]) == blend_score[key], str(rk_path), item + " blend score",
                 blend_score[key], float(row["blend_score"]))
        au.check("blend", int(row["blend_rank"]) == blend_rank[key], str(rk_path), item + " blend rank",
                 blend_rank[key], int(row["blend_rank"]))
    au.check("blend", seen == set(blend_score), str(rk_path), "pair set", len(blend_score), len(seen))
    for m, key in (("rrf", "run_rrf"), ("ce", "run_ce"), ("blend", "run_blend")):
        run = read_run(path_of(key))
        au.check("runs", list(run) == [q for q in analysed if q in orders[m]], str(path_of(key)), "query order",
                 len(orders[m]), len(run))
        for q, order in orders[m].items():
            got = run.get(q, [])
            au.check("runs", [d for d, _, _ in got] == order, str(path_of(key)), f"qid {q} order", order[:5],
                     [d for d, _, _ in got][:5])
            ranks_ok = [r for _, r, _ in got] == list(range(1, len(got) + 1))
            scores = [float(s) for _, _, s in got]
            au.check("runs", ranks_ok and all(a > b for a, b in zip(scores, scores[1:])), str(path_of(key)),
                     f"qid {q} ranks/scores", "ranks 1..n with strictly decreasing scores", "not so")

    # 6. qrels and per-query metrics ----------------------------------------------------------
    qrels = read_qrels(path_of("run_qrels"))
    source_key = "qrels_confirm" if kind == "confirmation" else "qrels_dev"
    full = {}
    with open(path_of(source_key), encoding="utf-8", newline="") as fh:
        for i, line in enumerate(fh):
            if i == 0:
                continue
            q, d, g = line.rstrip("\r\n").split("\t")
            full.setdefault(q, {})[d] = int(g)
    for q in analysed:
        au.check("qrels", qrels.get(q) == full.get(q), str(path_of("run_qrels")), f"qid {q}", full.get(q), qrels.get(q))
    au.check("qrels", set(qrels) <= set(analysed), str(path_of("run_qrels")), "extra queries", [],
             sorted(set(qrels) - set(analysed)))
    ms = settings["metrics"]
    nk, rks, mk = ms["ndcg_k"], ms["recall_ks"], ms["mrr_k"]
    recomputed: dict[str, dict[str, float]] = {}
    pq_path = path_of("per_query")
    pq = read_table(pq_path)
    au.check("per_query", [r["qid"] for r in pq] == analysed, str(pq_path), "query rows",
             f"{len(analysed)} rows in analysed order",
             f"{len(pq)} rows; missing {sorted(set(analysed) - {r['qid'] for r in pq})[:5]}")
    rows_by_q = {r["qid"]: r for r in pq}
    for q in analysed:
        if q not in orders["ce"] or q not in qrels:
            continue
        rec = {}
        for m in METHODS:
            o = orders[m][q]
            rec[f"{m}_ndcg@{nk}"] = ndcg(o, qrels[q], nk)
            for k in rks:
                rec[f"{m}_recall@{k}"] = recall(o, qrels[q], k)
                positives = {d for d, g in qrels[q].items() if g > 0}
                rec[f"{m}_capped_recall@{k}"] = len(positives & set(o[:k])) / min(len(positives), k)
            rec[f"{m}_mrr@{mk}"] = mrr(o, qrels[q], mk)
            rec[f"{m}_first_rel_rank"] = first_rel(o, qrels[q])
        recomputed[q] = rec
        row = rows_by_q.get(q)
        if row is None:
            continue
        for col, val in rec.items():
            found = row.get(col)
            if col.endswith("first_rel_rank"):
                ok = (found == "" and val is None) or (found not in ("", None) and int(found) == val)
            else:
                ok = found is not None and float(found) == val
            au.check("per_query", ok, str(pq_path), f"qid {q} {col}", val, found)

    # 7. groups ------------------------------------------------------------------------------
    groups = components(analysed, qrels)
    width = max(3, len(str(len(groups))))
    expect_rows = [(f"G{i + 1:0{width}d}", str(i), str(len(g)), q) for i, g in enumerate(groups) for q in g]
    got_rows = [(r["group_id"], r["group_index"], r["group_size"], r["qid"]) for r in read_table(path_of("groups"))]
    au.check("groups", got_rows == expect_rows, str(path_of("groups")), "membership/order/sizes",
             _first_diff(expect_rows, got_rows), _first_diff(got_rows, expect_rows))
    gmeta = json.loads(path_of("groups_meta").read_text(encoding="utf-8"))
    au.check("groups", gmeta["groups"] == {f"G{i + 1:0{width}d}": g for i, g in enumerate(groups)},
             str(path_of("groups_meta")), "groups", len(groups), gmeta.get("n_groups"))

    # 8. bootstrap: indices -> every replicate --------------------------------------------------
    B = settings["bootstrap_B"]
    comps = settings["comparisons"]["all"]
    primary = settings["comparisons"]["primary"]
    metric = f"ndcg@{nk}"
    deltas = {}
    if len(recomputed) == len(analysed):
        for name, (a, b) in comps.items():
            deltas[name] = [recomputed[q][f"{a}_{metric}"] - recomputed[q][f"{b}_{metric}"] for q in analysed]
    pos = {q: i for i, q in enumerate(analysed)}
    members = [[pos[q] for q in g] for g in groups]
    g_idx = _read_matrix(path_of("grouped_indices"), B, len(groups), au)
    q_idx = _read_matrix(path_of("query_indices"), B, len(analysed), au)
    reps_path = path_of("replicates")
    saved = read_table(reps_path)
    au.check("replicates", len(saved) == B, str(reps_path), "replicate count", B, len(saved))
    recomputed_reps = {}
    for name in comps:
        if name not in deltas:
            continue
        d = deltas[name]
        gsum = [seq_sum(d[i] for i in m) for m in members]
        gsize = [len(m) for m in members]
        grouped, query = [], []
        for row in g_idx:
            num, den = 0.0, 0
            for g in row:
                num += gsum[g]
                den += gsize[g]
            grouped.append(num / den)
        for row in q_idx:
            num = 0.0
            for i in row:
                num += d[i]
            query.append(num / len(row))
        recomputed_reps[f"grouped_{name}"], recomputed_reps[f"query_{name}"] = grouped, query
        for col, vals in ((f"grouped_{name}", grouped), (f"query_{name}", query)):
            for b_, (row, v) in enumerate(zip(saved, vals)):
                found = row.get(col)
                au.check("replicates", found is not None and float(found) == v, str(reps_path),
                         f"replicate {b_} {col}", v, found)

    # 9. summary.json and the report -----------------------------------------------------------
    summary = json.loads(path_of("summary").read_text(encoding="utf-8"))
    sp = str(path_of("summary"))
    lo_p, hi_p = settings["percentiles"]
    thr = settings["threshold"]
    au.check("summary", summary["n_queries"] == len(analysed) and summary["n_groups"] == len(groups), sp,
             "n_queries / n_groups", [len(analysed), len(groups)], [summary["n_queries"], summary["n_groups"]])
    hist = {}
    for g in groups:
        hist[str(len(g))] = hist.get(str(len(g)), 0) + 1
    au.check("summary", summary["group_size_histogram"] == dict(sorted(hist.items(), key=lambda kv: int(kv[0]))), sp,
             "group size histogram", hist, summary["group_size_histogram"])
    method_means = {}
    if len(recomputed) == len(analysed):
        for m in METHODS:
            mean = seq_sum(recomputed[q][f"{m}_{metric}"] for q in analysed) / len(analysed)
            method_means[m] = mean
            au.check("summary", summary["methods"][m]["mean"] == mean, sp, f"method {m} mean {metric}", mean,
                     summary["methods"][m]["mean"])
            for other in [f"recall@{k}" for k in rks] + [f"mrr@{mk}"]:
                mo = seq_sum(recomputed[q][f"{m}_{other}"] for q in analysed) / len(analysed)
                au.check("summary", summary["methods"][m].get(f"mean_{other}") == mo, sp, f"method {m} mean {other}",
                         mo, summary["methods"][m].get(f"mean_{other}"))
    expected_numbers = {}
    for name in comps:
        if name not in deltas:
            continue
        d = deltas[name]
        c = summary["comparisons"][name]
        mean = seq_sum(d) / len(d)
        gi = [percentile(recomputed_reps[f"grouped_{name}"], lo_p), percentile(recomputed_reps[f"grouped_{name}"], hi_p)]
        qi = [percentile(recomputed_reps[f"query_{name}"], lo_p), percentile(recomputed_reps[f"query_{name}"], hi_p)]
        w, t, l = sum(x > 0 for x in d), sum(x == 0 for x in d), sum(x < 0 for x in d)
        exp = {"mean": mean, "grouped_interval": gi, "query_interval": qi, "wins": w, "ties": t, "losses": l,
               "grouped_covers_0": gi[0] <= 0 <= gi[1], "grouped_covers_threshold": gi[0] <= thr <= gi[1],
               "query_covers_0": qi[0] <= 0 <= qi[1], "query_covers_threshold": qi[0] <= thr <= qi[1],
               "mean_reaches_threshold": mean >= thr}
        if len(groups) > 1:
            logo = []
            for m in members:
                drop = set(m)
                logo.append(seq_sum(d[i] for i in range(len(d)) if i not in drop) / (len(d) - len(drop)))
            exp["leave_one_group_out.min"], exp["leave_one_group_out.max"] = min(logo), max(logo)
        for key, val in exp.items():
            if key.startswith("leave_one_group_out"):
                found = (c.get("leave_one_group_out") or {}).get(key.split(".")[1])
            else:
                found = c.get(key)
            au.check("summary", found == val, sp, f"{name} {key}", val, found)
        expected_numbers[name] = exp
    if primary in deltas:
        d = deltas[primary]
        worst = sorted(range(len(d)), key=lambda i: (d[i], i))[:3]
        au.check("summary", [w["qid"] for w in summary.get("worst_primary", [])] == [analysed[i] for i in worst], sp,
                 "worst 3 primary queries", [analysed[i] for i in worst], [w["qid"] for w in summary.get("worst_primary", [])])
        if "repair" in summary:
            ce_loss = [q for q in analysed if recomputed[q][f"ce_{metric}"] < recomputed[q][f"rrf_{metric}"]]
            ce_win = [q for q in analysed if recomputed[q][f"ce_{metric}"] > recomputed[q][f"rrf_{metric}"]]
            rep = {"ce_losses_vs_rrf": len(ce_loss),
                   "repaired_by_blend": sum(recomputed[q][f"blend_{metric}"] > recomputed[q][f"ce_{metric}"] for q in ce_loss),
                   "ce_wins_vs_rrf": len(ce_win),
                   "weakened_by_blend": sum(recomputed[q][f"blend_{metric}"] < recomputed[q][f"ce_{metric}"] for q in ce_win)}
            for k, v in rep.items():
                au.check("summary", summary["repair"].get(k) == v, sp, f"repair {k}", v, summary["repair"].get(k))
    if "evalstats" in summary and "evalstats" in settings and len(recomputed) == len(analysed):
        _audit_evalstats(summary["evalstats"], settings["evalstats"], analysed, recomputed, qrels, cands, comps,
                         metric, sp, au)
    _audit_report(path_of("report"), expected_numbers, method_means, au)

    # 10. the seal ---------------------------------------------------------------------------
    confirm_ids = set(split_confirm)
    if kind == "confirmation":
        au.note("seal", "confirmation run: every analysed query must be a confirmation query")
        au.check("seal", set(analysed) <= confirm_ids, str(path_of("run_queries")), "analysed queries",
                 "confirmation ids only", sorted(set(analysed) - confirm_ids)[:5])
    else:
        tables = {"run_queries": analysed, "run_candidates": list(cands), "pairs": list(logits),
                  "run_qrels": list(qrels), "per_query": [r["qid"] for r in pq],
                  "groups": [r[3] for r in got_rows], "rankings": [k[0] for k in seen],
                  "summary worst_primary": [w["qid"] for w in summary.get("worst_primary", [])]}
        for key in ("run_rrf", "run_ce", "run_blend"):
            tables[key] = list(read_run(path_of(key)))
        for name, ids in tables.items():
            leaked = sorted(set(ids) & confirm_ids)
            au.check("seal", not leaked, name, "query ids", "no confirmation query id", leaked[:10])
    return {"seconds": round(time.perf_counter() - t0, 3), "run": manifest.get("run"), "kind": kind,
            "scorer": manifest["scorer"], "queries": len(analysed), "pairs": sum(len(v) for v in logits.values()),
            "groups": len(groups), "replicates": B}


def _audit_evalstats(ev, cfg, analysed, recomputed, qrels, cands, comps, metric, sp, au):
    """McNemar counts on success@1 and the declared slice means, from the recomputed per-query data."""
    for name, (a, b) in comps.items():
        sa = [recomputed[q][f"{a}_first_rel_rank"] == 1 for q in analysed]
        sb = [recomputed[q][f"{b}_first_rel_rank"] == 1 for q in analysed]
        gained = sum(1 for x, y in zip(sa, sb) if x and not y)
        lost = sum(1 for x, y in zip(sa, sb) if y and not x)
        n = gained + lost
        tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1))
        p = 1.0 if n == 0 else min(1.0, 2 * tail / 2 ** n)
        got = ev["mcnemar"]["comparisons"].get(name, {})
        for key, val in (("gained", gained), ("lost", lost), ("unchanged", len(analysed) - n)):
            au.check("evalstats", got.get(key) == val, sp, f"McNemar {name} {key}", val, got.get(key))
        au.check("evalstats", got.get("p") is not None and abs(got["p"] - p) <= 1e-12, sp, f"McNemar {name} p",
                 p, got.get("p"))

    def slice_of(family, q):
        n_rel = sum(1 for g in qrels[q].values() if g > 0)
        in_c = sum(1 for d in cands[q] if qrels[q].get(d, 0) > 0)
        if family == "relevant_count":
            return "one" if n_rel == 1 else "several"
        return "all" if in_c == n_rel else ("none" if in_c == 0 else "partly")

    for family, weights in cfg["slices"].items():
        got_f = ev["slices"].get(family, {})
        for s_name, w in weights.items():
            qs = [q for q in analysed if slice_of(family, q) == s_name]
            got_s = got_f.get("slices", {}).get(s_name, {})
            au.check("evalstats", got_s.get("n") == len(qs), sp, f"slice {family}.{s_name} n", len(qs), got_s.get("n"))
            for m in METHODS:
                val = seq_sum(recomputed[q][f"{m}_{metric}"] for q in qs) / len(qs) if qs else None
                au.check("evalstats", got_s.get("means", {}).get(m) == val, sp, f"slice {family}.{s_name} {m} mean",
                         val, got_s.get("means", {}).get(m))
        for m in METHODS:
            means = {}
            for s_name in weights:
                qs = [q for q in analysed if slice_of(family, q) == s_name]
                means[s_name] = seq_sum(recomputed[q][f"{m}_{metric}"] for q in qs) / len(qs) if qs else None
            total = 0.0
            for s_name in sorted(weights):
                if weights[s_name] == 0:
                    continue
                if means[s_name] is None:
                    total = None
                    break
                total += weights[s_name] * means[s_name]
            found = got_f.get("declared_weight_mean", {}).get(m)
            au.check("evalstats", found == total, sp, f"declared-weight mean {family} {m}", total, found)


def _first_diff(a, b):
    for x, y in zip(a, b):
        if x != y:
            return x
    return a[len(b)] if len(a) > len(b) else None


def _read_matrix(path: Path, rows: int, cols: int, au: Audit) -> list[list[int]]:
    table = read_table(path)
    au.check("bootstrap_indices", len(table) == rows, str(path), "replicate count", rows, len(table))
    out = []
    for b, row in enumerate(table):
        vals = [int(row[f"draw{j}"]) for j in range(len(row) - 1)]
        ok = len(vals) == cols and all(0 <= v < cols for v in vals) and int(row["replicate"]) == b
        au.check("bootstrap_indices", ok, str(path), f"replicate {b}", f"{cols} draws in [0, {cols})", vals[:5])
        out.append(vals)
    return out


def _audit_report(path: Path, expected: dict, method_means: dict, au: Audit) -> None:
    """The methods and comparison tables of report.md (their first rows) must show the
    recomputed numbers (6 decimals)."""
    text = path.read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and "|" in line[2:]:
            first = line.split("|")[1].strip()
            rows.setdefault(first.replace(" (primary)", ""), line)
    for m, mean in method_means.items():
        cells = [c.strip() for c in rows.get(m, "|  |  |").split("|")[1:-1]]
        au.check("report", len(cells) > 1 and cells[1] == f"{mean:.6f}", str(path), f"method {m} mean",
                 f"{mean:.6f}", cells[1] if len(cells) > 1 else "missing row")
    for name, exp in expected.items():
        line = rows.get(name)
        if line is None:
            au.check("report", False, str(path), f"{name} row", "a comparison row", "missing")
            continue
        cells = [c.strip() for c in line.split("|")[1:-1]]
        want = [f"{exp['mean']:.6f}", f"[{exp['grouped_interval'][0]:.6f}, {exp['grouped_interval'][1]:.6f}]",
                f"[{exp['query_interval'][0]:.6f}, {exp['query_interval'][1]:.6f}]"]
        au.check("report", cells[1:4] == want, str(path), f"{name} mean and intervals", want, cells[1:4])
        au.check("report", cells[8] == f"{exp['wins']}/{exp['ties']}/{exp['losses']}", str(path), f"{name} W/T/L",
                 f"{exp['wins']}/{exp['ties']}/{exp['losses']}", cells[8])
        if "leave_one_group_out.min" in exp:
            logo = f"{exp['leave_one_group_out.min']:.6f} … {exp['leave_one_group_out.max']:.6f}"
            au.check("report", cells[9] == logo, str(path), f"{name} leave-one-group-out range", logo, cells[9])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rundir", type=Path)
    ap.add_argument("--lockdir", type=Path, default=None, help="lockfile folder (default: the manifest's)")
    ap.add_argument("--out", type=Path, default=None, help="where to write audit.json (default: RUNDIR/audit.json)")
    args = ap.parse_args(argv)
    au = Audit()
    try:
        info = audit_run(args.rundir, args.lockdir, au)
    except (Unauditable, FileNotFoundError, KeyError, ValueError, json.JSONDecodeError) as exc:
        print(f"AUDIT ERROR: {args.rundir} cannot be audited: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    failed = au.failed
    result = {"ok": not failed, "failed_checks": failed, "info": info,
              "float_comparison": "exact (same documented summation order on both sides)",
              "checks": {n: {"checked": c["checked"], "failures": len(c["failures"]),
                             "first_failures": c["failures"][:MAX_FAILURES_SHOWN], **({"note": c["note"]} if "note" in c else {})}
                         for n, c in au.checks.items()}}
    out = args.out or (args.rundir / "audit.json")
    tmp = out.with_name(f".{out.name}.partial")
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)
    print(f"audit of {args.rundir} ({info['kind']}, scorer {info['scorer']}): {info['queries']} queries, "
          f"{info['pairs']} pairs, {info['groups']} groups, B={info['replicates']}, {info['seconds']} s")
    print(f"{'check':<20} {'checked':>9} {'failed':>7}")
    for n, c in au.checks.items():
        print(f"{n:<20} {c['checked']:>9} {len(c['failures']):>7}")
    if failed:
        print("\nFAILED CHECKS:")
        for n in failed:
            for f in au.checks[n]["failures"][:MAX_FAILURES_SHOWN]:
                print(f"  [{n}] {f['file']} :: {f['item']} :: expected {f['expected']!r} found {f['found']!r}")
            extra = len(au.checks[n]["failures"]) - MAX_FAILURES_SHOWN
            if extra > 0:
                print(f"  [{n}] ... and {extra} more")
        print(f"AUDIT FAILED: {', '.join(failed)}")
        return 1
    print("AUDIT PASSED: every check agrees")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
