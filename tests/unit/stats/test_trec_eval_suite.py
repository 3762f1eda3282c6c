"""trec_eval's own test suite, reproduced by BOTH metric implementations of the project.

The data are trec_eval's test files (usnistgov/trec_eval @ f4253652c8efd0d86ddffd0d163cc0a0f813111a,
tag v10.0, folder ``test/``); where they come from, their sha256s, their licence and the command
line behind each expected output: ``tests/data/trec_eval/PROVENANCE.md``. They are committed there,
with trec_eval's LICENSE.md (NIST's notice permits copying when the notice is kept); ``$TREC_EVAL_TEST_DATA``
may name another copy. Every sha256 of SHA256SUMS is verified before anything is read; a missing or
different file FAILS the tests (never a skip).

Implementations under test, each on an explicitly ordered list of doc ids:
* the pipeline: ``metrics.ndcg_at`` / ``recall_at`` / ``mrr_at`` (trec_eval's C code through pytrec_eval);
* the audit: ``scripts/audit`` (``definitions``) ``ndcg`` / ``recall`` / ``mrr`` (standard library).

What trec_eval does, as read in its C source at that commit (file : function):
* Order (form_res_rels.c : ``comp_sim_docno``): ``sim`` descending, ties by ``strcmp(p2->docno,
  p1->docno)``, i.e. docno descending. The rank column of the run is ignored, and so is every field
  after the sixth (get_trec_results.c; ``results.trunc`` has such trailing text). ``sim`` is read with
  ``atof`` (correctly rounded, as Python's ``float``). Duplicate docnos are an error.
* Relevance (form_res_rels.c : ``te_form_res_rels``): a level < 0 in the qrels = "in the pool but
  unjudged" (RELVALUE_UNJUDGED), counted at no level; a retrieved doc absent from the qrels =
  RELVALUE_NONPOOL. Binary measures (recall m_recall.c, recip_rank m_recip_rank.c, num_rel,
  num_rel_ret) call a doc relevant when its level >= ``-l`` (default 1; ``out.test.aql`` uses -l2).
* ndcg_cut (m_ndcg_cut.c : ``te_calc_ndcg_cut``): gain = the level itself for every retrieved doc
  with level > 0, discount log2(rank + 1); the ideal DCG takes ALL judged docs with level > 0 sorted
  by level. ``-l`` is NOT applied to ndcg_cut (level-1 docs keep gain 1 under -l2).
* recall_K = relevant in the first K / num_rel, and 0 when num_rel = 0 (early return).
  recip_rank = 1 / rank of the first relevant doc, no cut-off (0 when none is retrieved).
* Query set (trec_eval.c : ``main``): the loop runs over the QRELS topics; a results topic without
  qrels is never evaluated. A qrels topic without results: with ``-c`` it is evaluated as an empty
  ranking (every measure 0; printed in the -q output since v10.0, not printed in v9.0.8) and the
  averages divide by the number of qrels topics; WITHOUT ``-c`` v10.0 exits with status 4 ("result
  qid ... not found in qrels", commit 9812815fe7ee) where v9.0.8 skipped the topic. A qrels topic with no
  relevant doc is evaluated: it prints 0 for ndcg_cut, recall and recip_rank and counts in ``all``.
  ``all`` = sum of the per-query values / number of queries (meas_avg.c).

How values are compared. trec_eval prints ``printf("%6.4f")``: the binary double correctly rounded
to 4 decimals. Python's ``f"{x:.4f}"`` performs the same correctly rounded conversion, so the check
is the exact STRING equality ``f"{x:.4f}" == printed``: it holds iff x lies in the printed value's
rounding interval (|x - printed| <= 5e-5, the boundary decided by the same rule as trec_eval), which
is the most the file can say. It cannot be flipped by summation-order noise: the closest computed
value is ~1e-6 away from a rounding boundary, checked below (``test_no_value_is_near_a_rounding_boundary``).

Every expected value in these files is reproduced by both implementations (no expected failure).
The one definitional difference is a query with no relevant document: trec_eval prints 0 and
averages it in; the project's metrics refuse it (ValueError), asserted in ``test_query_without_*``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import audit_module

from rerank_study.rankings import ranking
from rerank_study.stats import metrics

ROOT = Path(__file__).resolve().parents[3]
# PROVENANCE.md, SHA256SUMS and the data files (committed); another copy: $TREC_EVAL_TEST_DATA
MANIFEST = ROOT / "tests" / "data" / "trec_eval"
DATA_ENV = "TREC_EVAL_TEST_DATA"


@functools.cache
def load_audit():
    """The standard-library audit's definitions (scripts/audit/expected/definitions.py), through the one test
    helper."""
    return audit_module("expected.definitions")


# ------------------------------------------------------------------ the data and their pins --
def pinned_sums() -> dict[str, str]:
    sums = {}
    for line in (MANIFEST / "SHA256SUMS").read_text(encoding="ascii").splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    return sums


def data_candidates() -> list[Path]:
    env = os.environ.get(DATA_ENV)
    return ([Path(env)] if env else []) + [MANIFEST]


@functools.cache
def data_dir() -> Path | None:
    """The first folder holding every file of SHA256SUMS (None when there is none)."""
    names = pinned_sums()
    for folder in data_candidates():
        if all((folder / n).is_file() for n in names):
            return folder
    return None


def need_data() -> Path:
    folder = data_dir()
    if folder is None:
        pytest.fail(f"trec_eval's test files not found in any of {[str(p) for p in data_candidates()]} "
                    f"(see {MANIFEST / 'PROVENANCE.md'}; set {DATA_ENV} to their folder)")
    return folder


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def verified(name: str) -> Path:
    """A data file, after its sha256 was checked against SHA256SUMS (nothing unverified is read)."""
    path = need_data() / name
    assert sha256_file(path) == pinned_sums()[name], f"{path}: sha256 differs from {MANIFEST / 'SHA256SUMS'}"
    return path


# ------------------------------------------------------------------- readers (trec_eval's rules) --
@functools.cache
def read_qrels(name: str) -> dict[str, dict[str, int]]:
    """``qid iter docno rel``: {qid: {docno: level}}; levels kept as written (0 and negative included)."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(verified(name).read_text(encoding="ascii").splitlines(), 1):
        qid, _iter, docno, rel = line.split()
        assert docno not in out.setdefault(qid, {}), f"{name}:{n}: duplicate judgement"
        out[qid][docno] = int(rel)
    return out


@functools.cache
def read_results(name: str) -> dict[str, dict[str, float]]:
    """``qid iter docno rank sim run_id [ignored...]``: {qid: {docno: sim}}. The rank column is not used."""
    out: dict[str, dict[str, float]] = {}
    for n, line in enumerate(verified(name).read_text(encoding="ascii").splitlines(), 1):
        fields = line.split()
        assert len(fields) >= 6, f"{name}:{n}: {len(fields)} fields"
        qid, docno, sim = fields[0], fields[2], float(fields[4])
        assert docno not in out.setdefault(qid, {}), f"{name}:{n}: duplicate document (trec_eval refuses it)"
        out[qid][docno] = sim
    return out


def trec_order(sims: dict[str, float]) -> list[str]:
    """trec_eval's order (comp_sim_docno): sim descending, then docno descending (strcmp on ASCII ==
    Python's str order). Written here independently of ranking.order_by_score / audit.tie_rule_order."""
    assert all(d.isascii() for d in sims)
    return sorted(sims, key=lambda d: (-sims[d], [-ord(c) for c in d] + [1]))  # "+ [1]": a prefix sorts after


@functools.cache
def read_expected(name: str) -> tuple[dict[tuple[str, str], str], tuple[str, ...]]:
    """``measure<pad>\\tqid\\tvalue`` lines -> ({(measure, qid): printed value}, qids in printed order);
    qid ``all`` = the aggregate."""
    values, qids = {}, []
    for n, line in enumerate(verified(name).read_text(encoding="ascii").splitlines(), 1):
        measure, qid, value = line.split("\t")
        key = (measure.strip(), qid)
        assert key not in values, f"{name}:{n}: {key} printed twice"
        values[key] = value
        if qid != "all" and qid not in qids:
            qids.append(qid)
    return values, tuple(qids)


@dataclass(frozen=True)
class Case:
    expected: str
    qrels: str
    results: str
    level: int  # trec_eval -l (relevance threshold of the binary measures)
    complete: bool  # trec_eval -c
    max_docs: int | None  # trec_eval -M
    command: str


CASES = {c.expected: c for c in (
    Case("out.test.aq", "qrels.test", "results.test", 1, False, None,
         "trec_eval -m all_trec -q test/qrels.test test/results.test"),
    Case("out.test.aql", "qrels.rel_level", "results.test", 2, False, None,
         "trec_eval -m all_trec -mrelstring.20 -q -l2 test/qrels.rel_level test/results.test"),
    Case("out.test.aqc", "qrels.test", "results.trunc", 1, True, None,
         "trec_eval -m all_trec -q -c test/qrels.test test/results.trunc"),
    Case("out.test.aqcM", "qrels.test", "results.trunc", 1, True, 100,
         "trec_eval -m all_trec -q -c -M100 test/qrels.test test/results.trunc"),
)}


def evaluated_queries(case: Case) -> list[str]:
    """trec_eval's query set: the qrels topics (with -c), else those that also have results (v9 rule;
    v10.0 without -c exits instead; no such topic exists in the cases without -c, asserted below)."""
    qrels, results = read_qrels(case.qrels), read_results(case.results)
    return sorted(q for q in qrels if case.complete or q in results)


def ranking_of(case: Case, qid: str) -> list[str]:
    order = trec_order(read_results(case.results).get(qid, {}))
    return order if case.max_docs is None else order[:case.max_docs]


def binary(qrels_q: dict[str, int], level: int) -> dict[str, int]:
    """The judgements as the binary measures see them under ``-l level``."""
    return {d: int(r >= level) for d, r in qrels_q.items()}


def cutoffs(case: Case, prefix: str) -> list[int]:
    values, _ = read_expected(case.expected)
    ks = sorted({int(m[len(prefix):]) for m, _q in values if re.fullmatch(re.escape(prefix) + r"\d+", m)})
    assert 10 in ks, f"{case.expected}: no {prefix}10"
    return ks


def implementations() -> dict[str, tuple]:
    audit = load_audit()
    return {"pipeline": (metrics.ndcg_at, metrics.recall_at, metrics.mrr_at),
            "audit": (audit.ndcg, audit.recall, audit.mrr)}


def compute(case: Case, impl: str, order=ranking_of) -> dict[tuple[str, str], float]:
    """{(measure, qid): value} for every per-query measure of the case that both projects define."""
    ndcg, recall, mrr = implementations()[impl]
    qrels = read_qrels(case.qrels)
    out = {}
    for q in evaluated_queries(case):
        ranked = order(case, q)
        graded, rel = qrels[q], binary(qrels[q], case.level)
        for k in cutoffs(case, "ndcg_cut_"):
            # graded gains; -l does not apply (m_ndcg_cut.c)
            out[f"ndcg_cut_{k}", q] = ndcg(ranked, graded, k)
        for k in cutoffs(case, "recall_"):
            out[f"recall_{k}", q] = recall(ranked, rel, k)
        out["recip_rank", q] = mrr(ranked, rel, max(len(ranked), 1))  # no cut-off: K = the whole ranking
    return out


def mismatches(case: Case, values: dict[tuple[str, str], float]) -> list[tuple]:
    expected, _ = read_expected(case.expected)
    return [(m, q, expected.get((m, q)), f"{v:.4f}", v) for (m, q), v in sorted(values.items())
            if expected.get((m, q)) != f"{v:.4f}"]


def means(case: Case, values: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """``all``: the per-query values summed in query order, divided by the number of evaluated queries."""
    qids = evaluated_queries(case)
    measures = sorted({m for m, _q in values})
    return {(m, "all"): sum(values[m, q] for q in qids) / len(qids) for m in measures}


IMPLS = ("pipeline", "audit")


# ------------------------------------------------------------------------------------ tests --
def test_sha256sums_and_provenance_agree():
    """The committed pins: SHA256SUMS and PROVENANCE.md name the same files with the same digests."""
    sums = pinned_sums()
    text = (MANIFEST / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([^`]+)` \| `[^`]+` \| \d+ \| `[0-9a-f]{40}` \| .*? \| "
                           r"`([0-9a-f]{64})` \|$", text, re.M))
    assert rows == sums
    assert {c.expected for c in CASES.values()} | {c.qrels for c in CASES.values()} | {
        c.results for c in CASES.values()} | {"LICENSE.md"} == set(sums)
    for case in CASES.values():
        assert case.command.replace("trec_eval", "./trec_eval", 1) in text


def test_data_files_match_their_sha256():
    folder = need_data()
    for name, digest in pinned_sums().items():
        assert sha256_file(folder / name) == digest, name


def test_audit_loads_from_one_place():
    audit = load_audit()
    for name in ("ndcg", "recall", "mrr", "first_rel", "tie_rule_order"):
        assert callable(getattr(audit, name)), name


def test_tie_rule_is_trec_evals_and_the_data_exercise_it():
    """Our order = ranking.order_by_score = audit.tie_rule_order on every query; the runs hold tied
    scores, and reversing the tie break changes at least one printed value (so the suite sees it)."""
    audit = load_audit()
    ties = 0
    for name in ("results.test", "results.trunc"):
        for qid, sims in read_results(name).items():
            ours = trec_order(sims)
            assert ours == ranking.order_by_score(sims) == audit.tie_rule_order(sims), (name, qid)
            ties += len(sims) - len(set(sims.values()))
    assert ties > 0

    def ties_ascending(case, qid):
        sims = read_results(case.results).get(qid, {})
        order = sorted(sims, key=lambda d: (-sims[d], d))
        return order if case.max_docs is None else order[:case.max_docs]

    changed = [(c.expected, m) for c in CASES.values() for m in mismatches(c, compute(c, "audit",
                                                                                      ties_ascending))]
    assert changed, "no printed value depends on the tie break: the suite would not catch a wrong tie rule"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", list(CASES))
def test_per_query_values_reproduce_trec_eval(name, impl):
    """ndcg_cut_K, recall_K (every cut-off printed) and recip_rank, per query, to the printed 4 decimals."""
    case = CASES[name]
    values = compute(case, impl)
    expected, printed_qids = read_expected(case.expected)
    assert len(values) == len(printed_qids) * (len(cutoffs(case, "ndcg_cut_")) + len(cutoffs(case, "recall_"))
                                               + 1)
    assert mismatches(case, values) == []


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", list(CASES))
def test_all_line_is_the_mean_over_trec_evals_query_set(name, impl):
    case = CASES[name]
    expected, _ = read_expected(case.expected)
    assert expected["num_q", "all"] == str(len(evaluated_queries(case)))
    assert mismatches(case, means(case, compute(case, impl))) == []


def test_pipeline_and_audit_agree_to_the_last_bit():
    for case in CASES.values():
        assert compute(case, "pipeline") == compute(case, "audit"), case.expected


@pytest.mark.parametrize("name", list(CASES))
def test_query_set_and_counts(name):
    """The -q lines are printed for exactly trec_eval's query set; num_ret / num_rel / num_rel_ret per
    query (and summed in ``all``) follow from our reading of the qrels (levels incl. 0 and -1, -l) and
    runs."""
    case = CASES[name]
    expected, printed = read_expected(case.expected)
    qrels, results = read_qrels(case.qrels), read_results(case.results)
    assert list(printed) == evaluated_queries(case)
    assert set(results) <= set(qrels)  # no run topic without qrels in these files (trec_eval would ignore it)
    if not case.complete:
        assert set(qrels) <= set(results)  # else trec_eval v10.0 without -c exits with status 4
    totals = {"num_ret": 0, "num_rel": 0, "num_rel_ret": 0}
    for q in printed:
        ranked, rel = ranking_of(case, q), binary(qrels[q], case.level)
        counts = {"num_ret": len(ranked), "num_rel": sum(rel.values()),
                  "num_rel_ret": sum(rel.get(d, 0) for d in ranked)}
        for m, v in counts.items():
            assert expected[m, q] == str(v), (m, q)
            totals[m] += v
    for m, v in totals.items():
        assert expected[m, "all"] == str(v), m


def test_no_value_is_near_a_rounding_boundary():
    """The string check is robust: every computed value is >= 1e-9 from a 4-decimal rounding boundary
    (measured minimum ~9e-7), i.e. far beyond any floating-point difference of summation order."""
    margin = min(abs(v * 1e4 - math.floor(v * 1e4) - 0.5) / 1e4
                 for c in CASES.values() for v in compute(c, "pipeline").values())
    assert margin > 1e-9


def test_missing_query_is_an_empty_ranking_scored_zero():
    """out.test.aqc (-c): query 302 is in the qrels, absent from results.trunc; trec_eval prints
    num_ret 0 and 0.0000 for every measure and averages it in (num_q 3). Both implementations score
    the empty ranking 0.0 (what the main test compares); pytrec_eval, like trec_eval without -c in
    v9, leaves the query out, and then the mean over the remaining queries is NOT trec_eval's -c mean."""
    import pytrec_eval

    case = CASES["out.test.aqc"]
    expected, _ = read_expected(case.expected)
    qrels, results = read_qrels(case.qrels), read_results(case.results)
    assert "302" in qrels and "302" not in results and expected["num_ret", "302"] == "0"
    for impl, (ndcg, recall, mrr) in implementations().items():
        for k in cutoffs(case, "ndcg_cut_"):
            assert ndcg([], qrels["302"], k) == 0.0 and expected[f"ndcg_cut_{k}", "302"] == "0.0000", impl
        for k in cutoffs(case, "recall_"):
            assert recall([], qrels["302"], k) == 0.0 and expected[f"recall_{k}", "302"] == "0.0000", impl
        assert mrr([], qrels["302"], 1) == 0.0 and expected["recip_rank", "302"] == "0.0000", impl
    run = {q: {d: float(s) for d, s in sims.items()} for q, sims in results.items()}
    answer = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert set(answer) == {"301", "303"}
    subset_mean = sum(answer[q]["ndcg_cut_10"] for q in sorted(answer)) / len(answer)
    assert f"{subset_mean:.4f}" != expected["ndcg_cut_10", "all"]


def test_graded_gains_and_the_relevance_threshold():
    """out.test.aql (-l2): ndcg_cut keeps every level > 0 as its gain (level-1 docs count); only the
    binary measures use the threshold. Either other reading misses a printed value of query 301."""
    case = CASES["out.test.aql"]
    qrels = read_qrels(case.qrels)
    levels = {r for q in qrels.values() for r in q.values()}
    assert {-1, 0, 1, 2, 3, 4} <= levels  # graded, with trec_eval's "unjudged" -1 and non-relevant 0
    ranked, graded = ranking_of(case, "301"), qrels["301"]
    expected, _ = read_expected(case.expected)
    for impl, (ndcg, _recall, mrr) in implementations().items():
        thresholded = {d: (r if r >= 2 else 0) for d, r in graded.items()}
        assert any(f"{ndcg(ranked, thresholded, k):.4f}" != expected[f"ndcg_cut_{k}", "301"]
                   for k in cutoffs(case, "ndcg_cut_")), impl
        unthresholded = binary(graded, 1)
        assert f"{mrr(ranked, unthresholded, len(ranked)):.4f}" != expected["recip_rank", "301"], impl
        # a level of -1 is never relevant and never a gain: writing 0 instead changes nothing
        zeroed = {d: max(r, 0) for d, r in graded.items()}
        for k in cutoffs(case, "ndcg_cut_"):
            assert ndcg(ranked, zeroed, k) == ndcg(ranked, graded, k), impl


@pytest.mark.parametrize("name", ["out.test.aq", "out.test.aql", "out.test.aqc"])
def test_reciprocal_rank_with_and_without_a_cut(name):
    """trec_eval's recip_rank has no cut-off: mrr with K = len(ranking) and any larger K reproduces it.
    The cut variant by construction: with r = the first relevant rank, MRR@K = 0 for K < r, 1/r for K >= r
    (and out.test.aqcM is trec_eval's own cut: rankings cut at 100 by -M100, compared in the main test)."""
    case = CASES[name]
    audit = load_audit()
    expected, _ = read_expected(case.expected)
    qrels = read_qrels(case.qrels)
    for q in evaluated_queries(case):
        ranked, rel = ranking_of(case, q), binary(qrels[q], case.level)
        r = metrics.first_relevant_rank(ranked, rel)
        assert r == audit.first_rel(ranked, rel)
        if r is None:
            assert expected["recip_rank", q] == "0.0000"
            continue
        assert expected["recip_rank", q] == f"{1 / r:.4f}"
        for impl, (_n, _r, mrr) in implementations().items():
            for k in (r, len(ranked), len(ranked) + 1, 10**9):
                assert mrr(ranked, rel, k) == 1 / r, (impl, q, k)
            for k in {1, r - 1} - {0, r}:
                assert mrr(ranked, rel, k) == 0.0, (impl, q, k)


def test_query_without_relevant_document_is_refused_not_scored():
    """A qrels topic whose judgements are all 0 or -1 (query 303 of qrels.rel_level, its relevant
    judgements removed; ranking of results.test): trec_eval evaluates it, prints 0.0000 for ndcg_cut,
    recall (m_recall.c returns 0 when num_rel = 0) and recip_rank, and counts it in ``all``; pytrec_eval
    (the same C code) says so below. The project's metrics refuse it: ValueError, never a silent 0 or
    a skip. The audit must not invent another number: it returns trec_eval's 0 or raises."""
    import pytrec_eval

    qrels_q = {d: r for d, r in read_qrels("qrels.rel_level")["303"].items() if r <= 0}
    assert qrels_q and {-1, 0} == set(qrels_q.values())
    ranked = trec_order(read_results("results.test")["303"])
    te = pytrec_eval.RelevanceEvaluator({"303": qrels_q},
                                        {"ndcg_cut.10", "recall.10", "recip_rank"}).evaluate(
        {"303": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}})["303"]
    assert te == {"ndcg_cut_10": 0.0, "recall_10": 0.0, "recip_rank": 0.0}
    for fn in (metrics.ndcg_at, metrics.recall_at, metrics.mrr_at):
        with pytest.raises(ValueError, match="no judged relevant document"):
            fn(ranked, qrels_q, 10)
    audit = load_audit()
    for fn, trec in ((audit.ndcg, "ndcg_cut_10"), (audit.recall, "recall_10"), (audit.mrr, "recip_rank")):
        try:
            value = fn(ranked, qrels_q, 10)
        except (ValueError, ZeroDivisionError):
            continue
        assert value == te[trec], fn.__name__


def test_run_topic_without_qrels_is_ignored_by_trec_eval_and_refused_by_the_metrics():
    """trec_eval loops over the qrels topics only: a run topic without judgements is never evaluated
    (pytrec_eval leaves it out). For the project's metrics its judgements are empty: ValueError."""
    import pytrec_eval

    ranked = trec_order(read_results("results.test")["301"])
    run = {"999": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
    assert pytrec_eval.RelevanceEvaluator({"301": read_qrels("qrels.test")["301"]},
                                          {"recip_rank"}).evaluate(run) == {}
    for fn in (metrics.ndcg_at, metrics.recall_at, metrics.mrr_at):
        with pytest.raises(ValueError):
            fn(ranked, {}, 10)
