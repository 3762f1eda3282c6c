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

Structure: ``RunView`` reads what the run folder says (each file once, on first use) and
recomputes what the definitions say; each ``check_*`` function compares the two for one
subject and records every comparison under its name. FAIL CLOSED: a check whose input is
missing or unreadable fails (naming what is missing); it never skips.

Exit status 0 when every check passes; 1 when any check fails (each failure names the check,
file, item and expected vs found); 2 when the folder is not a run at all (no manifest).
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
from functools import cached_property
from pathlib import Path

MAX_FAILURES_SHOWN = 20
METHODS = ("rrf", "ce", "blend")
STANDIN = "STAND-IN"


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

    def run(self, name: str, fn, view: "RunView") -> None:
        """Run one named check; if its inputs are missing or unreadable, the check FAILS saying so."""
        try:
            fn(view, self)
        except (OSError, KeyError, ValueError, TypeError, IndexError, json.JSONDecodeError, Unreadable) as exc:
            self.check(name, False, getattr(exc, "file", "") or str(view.rundir), "the check could not run",
                       "its inputs present and well formed", f"{type(exc).__name__}: {exc}")

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
    """Not a run folder at all (exit 2)."""


class Unreadable(Exception):
    def __init__(self, file, problem):
        self.file = str(file)
        super().__init__(f"{file}: {problem}")


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
    if not lines:
        raise Unreadable(path, "empty table (no header)")
    header = lines[0].rstrip("\r").split("\t")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.rstrip("\r").split("\t")
        if len(cells) != len(header):
            raise Unreadable(path, f"line {i}: {len(cells)} cells, header has {len(header)}")
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
    """A BEIR qrels table (header query-id, corpus-id, score; LF or CRLF)."""
    out: dict[str, dict[str, int]] = {}
    for row in read_table(path):
        out.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return out


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table of a report as a list of rows keyed by the header's cell texts."""
    tables, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                cells = [c.strip() for c in lines[j].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells)))
                j += 1
            tables.append(rows)
            i = j
        else:
            i += 1
    return tables


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
        for d, g in qrels[q].items():
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
            for d, g in qrels[cur].items():
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


def mean(values) -> float:
    values = list(values)
    return seq_sum(values) / len(values)


def exact_mcnemar(gained: int, lost: int) -> float:
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1))
    return min(1.0, 2 * tail / 2 ** n)


# ------------------------------------------------------------------------- the run's view --
def resolve(path_text: str, base: Path) -> Path:
    p = Path(path_text)
    return p if p.is_absolute() else base / p


class RunView:
    """What a finished run folder says (read on first use) and what the definitions say it should
    say (recomputed on first use). Checks compare the two."""

    def __init__(self, rundir: Path, lockdir: Path | None):
        self.rundir = rundir
        manifest_path = rundir / "manifest.json"
        if not manifest_path.exists():
            raise Unauditable(f"{manifest_path} does not exist: not a finished run")
        try:
            self.manifest = read_json(manifest_path)
            self.settings = self.manifest["settings"]
            self.art = {a["key"]: a for a in self.manifest["artefacts"]}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise Unauditable(f"{manifest_path} is not a run manifest: {type(exc).__name__}: {exc}") from None
        self.manifest_path = manifest_path
        self.lockdir = lockdir if lockdir is not None else resolve(self.manifest["lockdir"], rundir)
        self.kind = self.manifest.get("kind", "development")
        self.scorer = self.manifest.get("scorer")

    def path(self, key: str) -> Path:
        if key not in self.art:
            raise Unreadable(self.manifest_path, f"the manifest lists no artefact {key!r}")
        return resolve(self.art[key]["path"], self.rundir)

    def lock(self, name: str):
        return read_json(self.lockdir / name)

    # ---- what the run says
    @cached_property
    def split_dev(self):
        return read_ids(self.path("split_dev"))

    @cached_property
    def split_confirm(self):
        return read_ids(self.path("split_confirm"))

    @cached_property
    def analysed(self):
        return read_ids(self.path("run_queries"))

    @cached_property
    def frozen(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for row in read_table(self.path("candidates")):
            out.setdefault(row["qid"], []).append(row["doc_id"])
        return out

    @cached_property
    def cand_rows(self):
        return read_table(self.path("run_candidates"))

    @cached_property
    def cands(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for row in self.cand_rows:
            out.setdefault(row["qid"], []).append(row["doc_id"])
        return out

    @cached_property
    def pair_rows(self):
        return read_table(self.path("pairs"))

    @cached_property
    def logits(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for row in self.pair_rows:
            out.setdefault(row["qid"], {})[row["doc_id"]] = float(row["logit"])
        return out

    @cached_property
    def qrels(self):
        return read_qrels(self.path("run_qrels"))

    @cached_property
    def source_qrels(self):
        return read_qrels(self.path("qrels_confirm" if self.kind == "confirmation" else "qrels_dev"))

    @cached_property
    def per_query_rows(self):
        return read_table(self.path("per_query"))

    @cached_property
    def group_rows(self):
        return read_table(self.path("groups"))

    @cached_property
    def summary(self):
        return read_json(self.path("summary"))

    @cached_property
    def report_tables(self):
        return markdown_tables(self.path("report").read_text(encoding="utf-8"))

    # ---- what the definitions say
    @cached_property
    def metric(self) -> str:
        return f"ndcg@{self.settings['metrics']['ndcg_k']}"

    @cached_property
    def orders(self) -> dict[str, dict[str, list[str]]]:
        """rrf / ce / blend orders per analysed query, and the CE rank and blend score/rank per pair."""
        k = self.settings["blend_k"]
        orders = {m: {} for m in METHODS}
        self.r1, self.blend_score, self.blend_rank = {}, {}, {}
        for q in self.analysed:
            cands, lg = self.cands[q], self.logits[q]
            if set(lg) != set(cands):
                raise Unreadable(self.path("pairs"), f"query {q}: the scored pairs are not its candidates")
            ce_order = tie_rule_order(lg)
            r1 = {d: i for i, d in enumerate(ce_order, start=1)}
            s = {d: 1.0 / (k + (i + 1)) + 1.0 / (k + r1[d]) for i, d in enumerate(cands)}
            orders["rrf"][q], orders["ce"][q], orders["blend"][q] = cands, ce_order, tie_rule_order(s)
            for d in cands:
                self.blend_score[(q, d)], self.r1[(q, d)] = s[d], r1[d]
            for i, d in enumerate(orders["blend"][q], start=1):
                self.blend_rank[(q, d)] = i
        return orders

    @cached_property
    def recomputed(self) -> dict[str, dict]:
        """Every per-query metric of every method, from the orders and the run's qrels."""
        ms = self.settings["metrics"]
        nk, rks, mk = ms["ndcg_k"], ms["recall_ks"], ms["mrr_k"]
        out = {}
        for q in self.analysed:
            rels = self.qrels[q]
            positives = {d for d, g in rels.items() if g > 0}
            rec = {}
            for m in METHODS:
                o = self.orders[m][q]
                rec[f"{m}_ndcg@{nk}"] = ndcg(o, rels, nk)
                for k in rks:
                    rec[f"{m}_recall@{k}"] = recall(o, rels, k)
                    rec[f"{m}_capped_recall@{k}"] = len(positives & set(o[:k])) / min(len(positives), k)
                rec[f"{m}_mrr@{mk}"] = mrr(o, rels, mk)
                rec[f"{m}_first_rel_rank"] = first_rel(o, rels)
            out[q] = rec
        return out

    @cached_property
    def groups(self) -> list[list[str]]:
        return components(self.analysed, self.qrels)

    @cached_property
    def members(self) -> list[list[int]]:
        pos = {q: i for i, q in enumerate(self.analysed)}
        return [[pos[q] for q in g] for g in self.groups]

    @cached_property
    def comparisons(self) -> dict[str, list[str]]:
        return self.settings["comparisons"]["all"]

    @cached_property
    def deltas(self) -> dict[str, list[float]]:
        rc, metric = self.recomputed, self.metric
        return {name: [rc[q][f"{a}_{metric}"] - rc[q][f"{b}_{metric}"] for q in self.analysed]
                for name, (a, b) in self.comparisons.items()}

    def index_matrix(self, key: str, cols: int) -> list[list[int]]:
        out = []
        for b, row in enumerate(read_table(self.path(key))):
            if int(row["replicate"]) != b:
                raise Unreadable(self.path(key), f"row {b + 2}: replicate {row['replicate']}, expected {b}")
            out.append([int(row[f"draw{j}"]) for j in range(len(row) - 1)])
        return out

    @cached_property
    def grouped_idx(self):
        return self.index_matrix("grouped_indices", len(self.groups))

    @cached_property
    def query_idx(self):
        return self.index_matrix("query_indices", len(self.analysed))

    @cached_property
    def replicates(self) -> dict[str, list[float]]:
        """Every replicate of both schemes for every comparison, from the saved index matrices."""
        out = {}
        for name, d in self.deltas.items():
            gsum = [seq_sum(d[i] for i in m) for m in self.members]
            gsize = [len(m) for m in self.members]
            grouped, query = [], []
            for row in self.grouped_idx:
                num, den = 0.0, 0
                for g in row:
                    num += gsum[g]
                    den += gsize[g]
                grouped.append(num / den)
            for row in self.query_idx:
                num = 0.0
                for i in row:
                    num += d[i]
                query.append(num / len(row))
            out[f"grouped_{name}"], out[f"query_{name}"] = grouped, query
        return out

    @cached_property
    def expected_comparisons(self) -> dict[str, dict]:
        lo_p, hi_p = self.settings["percentiles"]
        thr = self.settings["threshold"]
        out = {}
        for name, d in self.deltas.items():
            m = seq_sum(d) / len(d)
            reps = self.replicates
            gi = [percentile(reps[f"grouped_{name}"], lo_p), percentile(reps[f"grouped_{name}"], hi_p)]
            qi = [percentile(reps[f"query_{name}"], lo_p), percentile(reps[f"query_{name}"], hi_p)]
            exp = {"mean": m, "grouped_interval": gi, "query_interval": qi, "wins": sum(x > 0 for x in d),
                   "ties": sum(x == 0 for x in d), "losses": sum(x < 0 for x in d),
                   "grouped_covers_0": gi[0] <= 0 <= gi[1], "grouped_covers_threshold": gi[0] <= thr <= gi[1],
                   "query_covers_0": qi[0] <= 0 <= qi[1], "query_covers_threshold": qi[0] <= thr <= qi[1],
                   "mean_reaches_threshold": m >= thr}
            if len(self.groups) > 1:
                logo = []
                for mem in self.members:
                    drop = set(mem)
                    logo.append(seq_sum(d[i] for i in range(len(d)) if i not in drop) / (len(d) - len(drop)))
                exp["leave_one_group_out.min"], exp["leave_one_group_out.max"] = min(logo), max(logo)
            out[name] = exp
        return out

    @cached_property
    def method_means(self) -> dict[str, float]:
        return {m: mean(self.recomputed[q][f"{m}_{self.metric}"] for q in self.analysed) for m in METHODS}


# ------------------------------------------------------------------------------ the checks --
def check_manifest_hashes(v: RunView, au: Audit) -> None:
    for key in v.art:
        p = v.path(key)
        expected = v.art[key]["sha256"]
        if not p.exists():
            au.check("manifest_hashes", False, str(p), key, expected, "missing file")
            continue
        actual = sha256_of(p)
        au.check("manifest_hashes", actual == expected, str(p), key, expected, actual)


def check_lockfile_pins(v: RunView, au: Audit) -> None:
    data_pins = v.lock("data_pins.json")["files"]
    derived = v.lock("derived_pins.json")
    src = "qrels_confirm" if v.kind == "confirmation" else "qrels_dev"
    pin_of = {"corpus": "corpus.jsonl", "queries": "queries.jsonl",
              src: "qrels/test.tsv" if v.kind == "confirmation" else "qrels/train.tsv"}
    for key, pin_name in pin_of.items():
        found = v.art[key]["sha256"] if key in v.art else "not in the manifest"
        au.check("lockfile_pins", found == data_pins[pin_name]["sha256"], str(v.manifest_path), key,
                 data_pins[pin_name]["sha256"], found)
    for key, pin in (("split_dev", derived["splits"]["dev"]), ("split_confirm", derived["splits"]["confirm"])):
        found = v.art[key]["sha256"] if key in v.art else "not in the manifest"
        au.check("lockfile_pins", found == pin["sha256"], str(v.manifest_path), key, pin["sha256"], found)
        lock_list = v.lockdir / pin["path"]
        au.check("lockfile_pins", sha256_of(lock_list) == pin["sha256"], str(lock_list), key, pin["sha256"],
                 sha256_of(lock_list))
    found = v.art["candidates"]["sha256"] if "candidates" in v.art else "not in the manifest"
    au.check("lockfile_pins", found == derived["candidates"]["sha256"], str(v.manifest_path), "candidates",
             derived["candidates"]["sha256"], found)
    if v.kind == "confirmation":
        sha_file = v.lockdir / "protocol.sha256"
        frozen = sha_file.read_text(encoding="utf-8").split()[0]
        au.check("lockfile_pins", frozen == v.manifest.get("protocol_sha256"), str(sha_file), "frozen protocol",
                 frozen, v.manifest.get("protocol_sha256"))
        au.check("lockfile_pins", sha256_of(v.lockdir / "protocol.json") == frozen, str(v.lockdir / "protocol.json"),
                 "protocol.json sha256", frozen, sha256_of(v.lockdir / "protocol.json"))
    if v.scorer == "pinned":
        pinned = v.lock("model_pins.json")["cross_encoder"]["files"]["model.safetensors"]["sha256"]
        au.check("lockfile_pins", v.manifest["model_weights_sha256"] == pinned, str(v.manifest_path), "model weights",
                 pinned, v.manifest["model_weights_sha256"])


def check_analysed_queries(v: RunView, au: Audit) -> None:
    pool = v.split_confirm if v.kind == "confirmation" else v.split_dev
    n = v.settings["n_queries"] or len(pool)
    au.check("analysed_queries", v.analysed == pool[:n], str(v.path("run_queries")), "query list",
             f"first {n} of the pinned {v.kind} split",
             "same" if v.analysed == pool[:n] else f"{len(v.analysed)} other ids")


def check_candidates(v: RunView, au: Audit) -> None:
    f, depth = str(v.path("run_candidates")), v.settings["depth"]
    seen: dict[str, int] = {}
    for row in v.cand_rows:
        seen[row["qid"]] = seen.get(row["qid"], 0) + 1
        au.check("candidates", int(row["rank"]) == seen[row["qid"]], f, f"qid {row['qid']} doc {row['doc_id']}",
                 seen[row["qid"]], int(row["rank"]))
    au.check("candidates", list(v.cands) == v.analysed, f, "query set", len(v.analysed), len(v.cands))
    for q in v.analysed:
        lst = v.cands.get(q, [])
        au.check("candidates", len(lst) == depth, f, f"qid {q} list length", depth, len(lst))
        dups = sorted({d for d in lst if lst.count(d) > 1})
        au.check("candidates", not dups, f, f"qid {q} duplicate doc ids", [], dups)
        au.check("candidates", q in v.frozen and lst == v.frozen[q][:depth], f, f"qid {q} vs frozen top-{depth}",
                 v.frozen.get(q, [])[:depth], lst)


def check_pairs(v: RunView, au: Audit) -> None:
    f, max_len = str(v.path("pairs")), v.settings["max_length"]
    seen = set()
    for i, row in enumerate(v.pair_rows, start=2):
        q, d = row["qid"], row["doc_id"]
        item = f"qid {q} doc {d} (line {i})"
        au.check("pairs", (q, d) not in seen, f, item, "one row per pair", "duplicate")
        seen.add((q, d))
        lst = v.cands.get(q, [])
        rank = lst.index(d) + 1 if d in lst else None
        au.check("pairs", rank is not None and int(row["r0"]) == rank, f, item, rank, row["r0"])
        au.check("pairs", (row["truncated"] == "true") == (int(row["total_tokens"]) > max_len), f, item,
                 f"truncated == total_tokens > {max_len}", f"{row['truncated']} with {row['total_tokens']}")
    for q in v.analysed:
        for d in v.cands.get(q, []):
            au.check("pairs", (q, d) in seen, f, f"qid {q} doc {d}", "a scored pair", "missing")


def check_scorer_label(v: RunView, au: Audit) -> None:
    stand_in = v.scorer == STANDIN
    for i, row in enumerate(v.pair_rows, start=2):
        au.check("scorer_label", (STANDIN in row["model"]) == stand_in, str(v.path("pairs")),
                 f"qid {row['qid']} doc {row['doc_id']} (line {i})",
                 "STAND-IN label" if stand_in else "pinned model identity", row["model"][:60])


def check_rankings(v: RunView, au: Audit) -> None:
    """CE ranks and blend scores/ranks in rankings.tsv (checks 'ce_ranks' and 'blend')."""
    v.orders  # noqa: B018 - computes r1 / blend_score / blend_rank
    f, seen = str(v.path("rankings")), set()
    for row in read_table(v.path("rankings")):
        key = (row["qid"], row["doc_id"])
        seen.add(key)
        item = f"qid {key[0]} doc {key[1]}"
        if key not in v.blend_score:
            au.check("blend", False, f, item, "a pair of the run", "unknown pair")
            continue
        au.check("blend", float(row["logit"]) == v.logits[key[0]][key[1]], f, item + " logit",
                 v.logits[key[0]][key[1]], float(row["logit"]))
        au.check("ce_ranks", int(row["r1"]) == v.r1[key], f, item + " CE rank", v.r1[key], int(row["r1"]))
        au.check("blend", float(row["blend_score"]) == v.blend_score[key], f, item + " blend score",
                 v.blend_score[key], float(row["blend_score"]))
        au.check("blend", int(row["blend_rank"]) == v.blend_rank[key], f, item + " blend rank",
                 v.blend_rank[key], int(row["blend_rank"]))
    au.check("blend", seen == set(v.blend_score), f, "pair set", len(v.blend_score), len(seen))


def check_runs(v: RunView, au: Audit) -> None:
    for m, key in (("rrf", "run_rrf"), ("ce", "run_ce"), ("blend", "run_blend")):
        f, run = str(v.path(key)), read_run(v.path(key))
        au.check("runs", list(run) == v.analysed, f, "query order", len(v.analysed), len(run))
        for q in v.analysed:
            got = run.get(q, [])
            au.check("runs", [d for d, _, _ in got] == v.orders[m][q], f, f"qid {q} order", v.orders[m][q][:5],
                     [d for d, _, _ in got][:5])
            scores = [float(s) for _, _, s in got]
            ok = [r for _, r, _ in got] == list(range(1, len(got) + 1)) and all(a > b for a, b in zip(scores, scores[1:]))
            au.check("runs", ok, f, f"qid {q} ranks/scores", "ranks 1..n with strictly decreasing scores", "not so")


def check_qrels(v: RunView, au: Audit) -> None:
    f = str(v.path("run_qrels"))
    for q in v.analysed:
        src = v.source_qrels.get(q)
        au.check("qrels", src is not None and v.qrels.get(q) == src, f, f"qid {q}",
                 src if src is not None else "judgements in the pinned qrels file", v.qrels.get(q))
    au.check("qrels", set(v.qrels) <= set(v.analysed), f, "extra queries", [], sorted(set(v.qrels) - set(v.analysed)))


def check_per_query(v: RunView, au: Audit) -> None:
    f, rows = str(v.path("per_query")), v.per_query_rows
    au.check("per_query", [r["qid"] for r in rows] == v.analysed, f, "query rows",
             f"{len(v.analysed)} rows in analysed order",
             f"{len(rows)} rows; missing {sorted(set(v.analysed) - {r['qid'] for r in rows})[:5]}")
    by_q = {r["qid"]: r for r in rows}
    for q, rec in v.recomputed.items():
        row = by_q.get(q, {})
        for col, val in rec.items():
            found = row.get(col)
            if col.endswith("first_rel_rank"):
                ok = (found == "" and val is None) or (found not in ("", None) and int(found) == val)
            else:
                ok = found is not None and float(found) == val
            au.check("per_query", ok, f, f"qid {q} {col}", val, found)


def check_groups(v: RunView, au: Audit) -> None:
    width = max(3, len(str(len(v.groups))))
    expect = [(f"G{i + 1:0{width}d}", str(i), str(len(g)), q) for i, g in enumerate(v.groups) for q in g]
    got = [(r["group_id"], r["group_index"], r["group_size"], r["qid"]) for r in v.group_rows]
    first_diff = next((i for i, (a, b) in enumerate(zip(expect, got)) if a != b), min(len(expect), len(got)))
    au.check("groups", got == expect, str(v.path("groups")), "membership/order/sizes",
             expect[first_diff] if first_diff < len(expect) else None,
             got[first_diff] if first_diff < len(got) else None)
    gmeta = read_json(v.path("groups_meta"))
    au.check("groups", gmeta["groups"] == {f"G{i + 1:0{width}d}": g for i, g in enumerate(v.groups)},
             str(v.path("groups_meta")), "groups", len(v.groups), gmeta.get("n_groups"))


def check_bootstrap_indices(v: RunView, au: Audit) -> None:
    B = v.settings["bootstrap_B"]
    for key, matrix, cols in (("grouped_indices", v.grouped_idx, len(v.groups)),
                              ("query_indices", v.query_idx, len(v.analysed))):
        f = str(v.path(key))
        au.check("bootstrap_indices", len(matrix) == B, f, "replicate count", B, len(matrix))
        for b, row in enumerate(matrix):
            ok = len(row) == cols and all(0 <= x < cols for x in row)
            au.check("bootstrap_indices", ok, f, f"replicate {b}", f"{cols} draws in [0, {cols})", row[:5])


def check_replicates(v: RunView, au: Audit) -> None:
    f, saved = str(v.path("replicates")), read_table(v.path("replicates"))
    B = v.settings["bootstrap_B"]
    au.check("replicates", len(saved) == B, f, "replicate count", B, len(saved))
    for col, vals in v.replicates.items():
        for b, (row, val) in enumerate(zip(saved, vals)):
            found = row.get(col)
            au.check("replicates", found is not None and float(found) == val, f, f"replicate {b} {col}", val, found)


def check_summary(v: RunView, au: Audit) -> None:
    s, f, metric = v.summary, str(v.path("summary")), v.metric
    au.check("summary", [s.get("n_queries"), s.get("n_groups")] == [len(v.analysed), len(v.groups)], f,
             "n_queries / n_groups", [len(v.analysed), len(v.groups)], [s.get("n_queries"), s.get("n_groups")])
    hist: dict[str, int] = {}
    for g in v.groups:
        hist[str(len(g))] = hist.get(str(len(g)), 0) + 1
    au.check("summary", s.get("group_size_histogram") == dict(sorted(hist.items(), key=lambda kv: int(kv[0]))), f,
             "group size histogram", hist, s.get("group_size_histogram"))
    ms = v.settings["metrics"]
    others = [f"recall@{k}" for k in ms["recall_ks"]] + [f"mrr@{ms['mrr_k']}"]
    for m in METHODS:
        got = s["methods"][m]
        au.check("summary", got.get("mean") == v.method_means[m], f, f"method {m} mean {metric}", v.method_means[m],
                 got.get("mean"))
        for other in others:
            mo = mean(v.recomputed[q][f"{m}_{other}"] for q in v.analysed)
            au.check("summary", got.get(f"mean_{other}") == mo, f, f"method {m} mean {other}", mo,
                     got.get(f"mean_{other}"))
    for name, exp in v.expected_comparisons.items():
        c = s["comparisons"][name]
        for key, val in exp.items():
            found = ((c.get("leave_one_group_out") or {}).get(key.split(".")[1]) if key.startswith("leave_one_group_out")
                     else c.get(key))
            au.check("summary", found == val, f, f"{name} {key}", val, found)
    primary = v.settings["comparisons"]["primary"]
    d = v.deltas[primary]
    worst = [v.analysed[i] for i in sorted(range(len(d)), key=lambda i: (d[i], i))[:3]]
    got = [w["qid"] for w in s["worst_primary"]]
    au.check("summary", got == worst, f, "worst 3 primary queries", worst, got)
    rc = v.recomputed
    ce_loss = [q for q in v.analysed if rc[q][f"ce_{metric}"] < rc[q][f"rrf_{metric}"]]
    ce_win = [q for q in v.analysed if rc[q][f"ce_{metric}"] > rc[q][f"rrf_{metric}"]]
    rep = {"ce_losses_vs_rrf": len(ce_loss),
           "repaired_by_blend": sum(rc[q][f"blend_{metric}"] > rc[q][f"ce_{metric}"] for q in ce_loss),
           "ce_wins_vs_rrf": len(ce_win),
           "weakened_by_blend": sum(rc[q][f"blend_{metric}"] < rc[q][f"ce_{metric}"] for q in ce_win)}
    for k, val in rep.items():
        au.check("summary", s["repair"].get(k) == val, f, f"repair {k}", val, s["repair"].get(k))


def check_evalstats(v: RunView, au: Audit) -> None:
    """McNemar counts on success@1 and the declared slice means, from the recomputed per-query data."""
    ev, cfg, f, metric, rc = v.summary["evalstats"], v.settings["evalstats"], str(v.path("summary")), v.metric, \
        v.recomputed
    for name, (a, b) in v.comparisons.items():
        sa = [rc[q][f"{a}_first_rel_rank"] == 1 for q in v.analysed]
        sb = [rc[q][f"{b}_first_rel_rank"] == 1 for q in v.analysed]
        gained = sum(1 for x, y in zip(sa, sb) if x and not y)
        lost = sum(1 for x, y in zip(sa, sb) if y and not x)
        p = exact_mcnemar(gained, lost)
        got = ev["mcnemar"]["comparisons"][name]
        for key, val in (("gained", gained), ("lost", lost), ("unchanged", len(v.analysed) - gained - lost)):
            au.check("evalstats", got.get(key) == val, f, f"McNemar {name} {key}", val, got.get(key))
        au.check("evalstats", got.get("p") is not None and abs(got["p"] - p) <= 1e-12, f, f"McNemar {name} p",
                 p, got.get("p"))

    def slice_of(family, q):
        n_rel = sum(1 for g in v.qrels[q].values() if g > 0)
        in_c = sum(1 for d in v.cands[q] if v.qrels[q].get(d, 0) > 0)
        if family == "relevant_count":
            return "one" if n_rel == 1 else "several"
        return "all" if in_c == n_rel else ("none" if in_c == 0 else "partly")

    for family, weights in cfg["slices"].items():
        got_f = ev["slices"][family]
        means = {}
        for s_name in weights:
            qs = [q for q in v.analysed if slice_of(family, q) == s_name]
            got_s = got_f["slices"][s_name]
            au.check("evalstats", got_s.get("n") == len(qs), f, f"slice {family}.{s_name} n", len(qs), got_s.get("n"))
            means[s_name] = {m: (mean(rc[q][f"{m}_{metric}"] for q in qs) if qs else None) for m in METHODS}
            for m in METHODS:
                au.check("evalstats", got_s["means"].get(m) == means[s_name][m], f,
                         f"slice {family}.{s_name} {m} mean", means[s_name][m], got_s["means"].get(m))
        for m in METHODS:
            total = 0.0
            for s_name in sorted(weights):
                if weights[s_name] == 0:
                    continue
                if means[s_name][m] is None:
                    total = None
                    break
                total += weights[s_name] * means[s_name][m]
            found = got_f["declared_weight_mean"].get(m)
            au.check("evalstats", found == total, f, f"declared-weight mean {family} {m}", total, found)


def check_report(v: RunView, au: Audit) -> None:
    """The methods and comparison tables of report.md show the recomputed numbers (6 decimals); the
    cells are found by their column headers."""
    f = str(v.path("report"))
    methods = next((t for t in v.report_tables if t and "method" in t[0] and any(k.startswith("mean ndcg") for k in t[0])),
                   None)
    comps = next((t for t in v.report_tables if t and "comparison" in t[0] and "W/T/L" in t[0]), None)
    au.check("report", methods is not None and comps is not None, f, "methods and comparisons tables",
             "both present", [methods is not None, comps is not None])
    if methods is None or comps is None:
        return
    mean_col = f"mean {v.metric}"
    by_method = {r["method"]: r for r in methods}
    for m, val in v.method_means.items():
        found = by_method.get(m, {}).get(mean_col)
        au.check("report", found == f"{val:.6f}", f, f"method {m} mean", f"{val:.6f}", found)
    by_name = {r["comparison"].replace(" (primary)", ""): r for r in comps}
    header = list(comps[0])
    col = {"grouped": next(h for h in header if h.startswith("grouped ") and h.endswith("interval")),
           "query": next(h for h in header if h.startswith("query-level ") and h.endswith("interval")),
           "logo": next(h for h in header if h.startswith("leave-one-group-out"))}
    for name, exp in v.expected_comparisons.items():
        row = by_name.get(name)
        if row is None:
            au.check("report", False, f, f"{name} row", "a comparison row", "missing")
            continue
        want = {"mean Δ": f"{exp['mean']:.6f}",
                col["grouped"]: f"[{exp['grouped_interval'][0]:.6f}, {exp['grouped_interval'][1]:.6f}]",
                col["query"]: f"[{exp['query_interval'][0]:.6f}, {exp['query_interval'][1]:.6f}]",
                "W/T/L": f"{exp['wins']}/{exp['ties']}/{exp['losses']}"}
        if "leave_one_group_out.min" in exp:
            want[col["logo"]] = f"{exp['leave_one_group_out.min']:.6f} … {exp['leave_one_group_out.max']:.6f}"
        for header_name, text in want.items():
            au.check("report", row.get(header_name) == text, f, f"{name} {header_name}", text, row.get(header_name))


def check_seal(v: RunView, au: Audit) -> None:
    confirm_ids = set(v.split_confirm)
    if v.kind == "confirmation":
        au.note("seal", "confirmation run: every analysed query must be a confirmation query")
        au.check("seal", set(v.analysed) <= confirm_ids, str(v.path("run_queries")), "analysed queries",
                 "confirmation ids only", sorted(set(v.analysed) - confirm_ids)[:5])
        return
    tables = {"run_queries": v.analysed, "run_candidates": list(v.cands), "pairs": list(v.logits),
              "run_qrels": list(v.qrels), "per_query": [r["qid"] for r in v.per_query_rows],
              "groups": [r["qid"] for r in v.group_rows],
              "rankings": [r["qid"] for r in read_table(v.path("rankings"))],
              "summary worst_primary": [w["qid"] for w in v.summary["worst_primary"]]}
    for key in ("run_rrf", "run_ce", "run_blend"):
        tables[key] = list(read_run(v.path(key)))
    for name, ids in tables.items():
        leaked = sorted(set(ids) & confirm_ids)
        au.check("seal", not leaked, name, "query ids", "no confirmation query id", leaked[:10])


CHECKS = (
    ("manifest_hashes", check_manifest_hashes), ("lockfile_pins", check_lockfile_pins),
    ("analysed_queries", check_analysed_queries), ("candidates", check_candidates), ("pairs", check_pairs),
    ("scorer_label", check_scorer_label), ("blend", check_rankings), ("runs", check_runs), ("qrels", check_qrels),
    ("per_query", check_per_query), ("groups", check_groups), ("bootstrap_indices", check_bootstrap_indices),
    ("replicates", check_replicates), ("summary", check_summary), ("evalstats", check_evalstats),
    ("report", check_report), ("seal", check_seal),
)


def audit_run(rundir: Path, lockdir: Path | None, au: Audit) -> dict:
    t0 = time.perf_counter()
    v = RunView(rundir, lockdir)
    for name, fn in CHECKS:
        au.run(name, fn, v)
    info = {"run": v.manifest.get("run"), "kind": v.kind, "scorer": v.scorer}
    for key, fn in (("queries", lambda: len(v.analysed)), ("pairs", lambda: len(v.pair_rows)),
                    ("groups", lambda: len(v.groups)), ("replicates", lambda: v.settings["bootstrap_B"])):
        try:
            info[key] = fn()
        except Exception:  # noqa: BLE001 - the failing check has already said why
            info[key] = None
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rundir", type=Path)
    ap.add_argument("--lockdir", type=Path, default=None, help="lockfile folder (default: the manifest's)")
    ap.add_argument("--out", type=Path, default=None, help="where to write audit.json (default: RUNDIR/audit.json)")
    args = ap.parse_args(argv)
    au = Audit()
    try:
        info = audit_run(args.rundir, args.lockdir, au)
    except Unauditable as exc:
        print(f"AUDIT ERROR: {args.rundir} cannot be audited: {exc}", file=sys.stderr)
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
            for fl in au.checks[n]["failures"][:MAX_FAILURES_SHOWN]:
                print(f"  [{n}] {fl['file']} :: {fl['item']} :: expected {fl['expected']!r} found {fl['found']!r}")
            extra = len(au.checks[n]["failures"]) - MAX_FAILURES_SHOWN
            if extra > 0:
                print(f"  [{n}] ... and {extra} more")
        print(f"AUDIT FAILED: {', '.join(failed)}")
        return 1
    print("AUDIT PASSED: every check agrees")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
