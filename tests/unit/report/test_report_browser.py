"""The query browser's data (rerank_study.report.report_browser) from small hand-made rankings: every expected
value below is worked out by hand in the comments; Kendall's tau is also held to scipy.stats.kendalltau."""

import html.parser
import json
import random

import pytest
from scipy.stats import kendalltau

from rerank_study.data.beir import Doc
from rerank_study.report import report_browser as rb
from rerank_study.report import report_html
from rerank_study.report.report_browser_page import STYLE, section

# q1: candidates a, b, c, d in RRF order; CE ranks 3, 1, 4, 2; blend ranks 1, 2, 4, 3
# q2: candidates e, f, g; CE and blend both 1, 2, 3
COLUMNS = ("qid", "doc_id", "r0", "logit", "r1", "blend_score", "blend_rank")
RANKINGS = [dict(zip(COLUMNS, row.split())) for row in (
    "q1 c 3 -1.5 4 0.25 4", "q1 a 1 0.5 3 1.5 1", "q1 b 2 2.0 1 1.0 2", "q1 d 4 1.0 2 0.5 3",
    "q2 e 1 3.0 1 2.0 1", "q2 f 2 2.0 2 1.0 2", "q2 g 3 1.0 3 0.5 3")]
# q1: a (grade 1) and c (grade 2) among the candidates, z (grade 1) not, y judged not relevant (0), not listed
# q2: only x is relevant, and it is not among the candidates
QRELS = {"q1": {"a": 1, "c": 2, "z": 1, "y": 0}, "q2": {"x": 1}}


def pq(qid, n_rel, n_in, rrf, ce, blend, first):
    row = {"qid": qid, "n_relevant": str(n_rel), "n_relevant_in_candidates": str(n_in)}
    for m, v, f in zip(("rrf", "ce", "blend"), (rrf, ce, blend), first):
        row[f"{m}_ndcg@10"], row[f"{m}_first_rel_rank"] = v, f
    return row


PER_QUERY = [pq("q1", 3, 2, "0.5", "0.25", "0.75", ("1", "2", "1")),
             pq("q2", 1, 0, "0.0", "0.0", "0.0", ("", "", ""))]
SUMMARY = {"metric": "ndcg@10", "primary": "blend-ce", "comparisons": {"blend-ce": {"a": "blend", "b": "ce"}},
           "worst_primary": [{"qid": "q2"}, {"qid": "q1"}]}
LONG = "y" * 130
CORPUS = {d: Doc(d, f"title {d}", f"text {d}") for d in "abcdefgxz"}
CORPUS["a"] = Doc("a", "T" * 100, LONG)  # a title of exactly 100 characters is kept whole
QUERIES = {"q1": "Q" * 250, "q2": "short query"}


def data():
    groups = rb.group_of(["G001", "G002"], [["q1", "q2"], ["q3"]])
    return rb.browser_data(SUMMARY, PER_QUERY, RANKINGS, QRELS, groups, QUERIES, CORPUS, "CE logit")


def test_the_records_hold_the_hand_computed_values():
    q1, q2 = data()["queries"]
    assert q1 == {
        "qid": "q1", "text": "Q" * 200 + "…", "group": "G001", "group_size": 2,
        "metric": [0.5, 0.25, 0.75], "delta": 0.5, "wtl": "W",
        "outcome": "repaired",  # CE 0.25 < RRF 0.5 and blend 0.75 > CE
        "first_rel": [1, 2, 1], "coverage": "partly",  # 2 of the 3 relevant documents are candidates
        # (CE rank, blend rank) in RRF order: (3,1) (1,2) (4,4) (2,3): concordant pairs ac bc bd cd,
        # discordant ab ad: (4 - 2) / 6
        "tau": 1 / 3,
        "ranked": [["a", 3, 1, 0.5, 1.5, 1], ["b", 1, 2, 2.0, 1.0, None], ["c", 4, 4, -1.5, 0.25, 2],
                   ["d", 2, 3, 1.0, 0.5, None]],
        "missing": [["z", 1]]}
    assert q2 == {
        "qid": "q2", "text": "short query", "group": "G001", "group_size": 2, "metric": [0.0, 0.0, 0.0],
        "delta": 0.0, "wtl": "T", "outcome": "tie", "first_rel": [None, None, None], "coverage": "none",
        "tau": 1.0, "ranked": [["e", 1, 1, 3.0, 2.0, None], ["f", 2, 2, 2.0, 1.0, None],
                               ["g", 3, 3, 1.0, 0.5, None]],
        "missing": [["x", 1]]}


def test_the_page_data_name_the_queries_and_cut_the_texts():
    d = data()
    assert d["named"] == {"worst": ["q2", "q1"], "repaired": ["q1"], "weakened": []}
    assert d["primary"] == ["blend-ce", "blend", "ce"] and d["methods"] == ["rrf", "ce", "blend"]
    assert d["cut"] == {"query": 200, "title": 100, "text": 120}
    assert list(d["docs"]) == ["a", "b", "c", "d", "e", "f", "g", "x", "z"]  # listed ones only, by id
    assert d["docs"]["a"] == ["T" * 100, "y" * 120 + "…"] and d["docs"]["z"] == ["title z", "text z"]


@pytest.mark.parametrize(("ce", "rrf", "blend", "delta", "want"), [
    (0.2, 0.5, 0.3, 0.1, "repaired"), (0.5, 0.2, 0.3, -0.2, "weakened"), (0.2, 0.5, 0.2, 0.0, "tie"),
    (0.5, 0.2, 0.6, 0.1, "other"), (0.2, 0.5, 0.1, -0.1, "other"),
    # the boundaries: a CE equal to RRF neither loses nor wins (so the blend neither repairs nor weakens it);
    # a blend equal to a winning CE does not weaken it (Δ = 0: a tie)
    (0.5, 0.5, 0.6, 0.1, "other"), (0.5, 0.5, 0.4, -0.1, "other"), (0.5, 0.5, 0.5, 0.0, "tie"),
    (0.5, 0.2, 0.5, 0.0, "tie")])
def test_outcomes(ce, rrf, blend, delta, want):
    assert rb.outcome({"rrf": rrf, "ce": ce, "blend": blend}, delta) == want


@pytest.mark.parametrize(("x", "y", "want"), [
    # pairs (0,1) (0,2) (1,2): y tied, concordant, concordant; n0 = 3, 1 tie in y: 2 / sqrt(3 * 2)
    ([1, 2, 3], [1, 1, 2], 2 / 6 ** 0.5),
    # the same with the sequences swapped: the tie is in x now
    ([1, 1, 2], [1, 2, 3], 2 / 6 ** 0.5),
    # x tied at (0,1), concordant at (0,2), y tied at (1,2): 1 / sqrt((3 - 1) * (3 - 1))
    ([1, 1, 2], [1, 2, 2], 0.5),
    # (0,1) discordant, (0,2) y tied, (1,2) concordant, (0,3) (1,3) (2,3) concordant: n0 = 6,
    # (4 - 1) / sqrt(6 * 5)
    ([1, 2, 3, 4], [2, 1, 2, 3], 3 / 30 ** 0.5),
    # a constant y (every pair tied in y): undefined
    ([1, 2, 3], [5, 5, 5], None)])
def test_kendall_tau_with_ties_in_either_sequence_by_hand(x, y, want):
    got = rb.kendall_tau(x, y)
    assert got == (None if want is None else pytest.approx(want, abs=1e-15))


def test_kendall_tau_of_sequences_of_two_lengths_is_refused_naming_them():
    with pytest.raises(ValueError, match=r"^Kendall tau of sequences of lengths 3 and 2$"):
        rb.kendall_tau([1, 2, 3], [1, 2])


def test_kendall_tau_equals_scipy_on_permutations_and_ties():
    rng = random.Random(7)
    for n in (2, 3, 10, 50):
        for _ in range(20):
            x, y = rng.sample(range(1, n + 1), n), rng.sample(range(1, n + 1), n)
            assert rb.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
            tied = [rng.randint(1, 3) for _ in range(n)]
            if len(set(tied)) > 1:
                assert rb.kendall_tau(tied, y) == pytest.approx(kendalltau(tied, y).statistic, abs=1e-12)
    assert rb.kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert rb.kendall_tau([1], [1]) is None and rb.kendall_tau([1, 1], [1, 2]) is None


def test_ranks_that_are_not_one_to_n_are_refused():
    with pytest.raises(ValueError, match="r0 is not"):
        rb.ranked([r for r in RANKINGS if r["qid"] == "q1" and r["doc_id"] != "b"], {})


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.data, self._in = [], None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self.links.append(a["href"])
        self._in = tag == "script" and a.get("id") == "qb-data"

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, data):
        if self._in:
            self.data = json.loads(data)


# A confirmation opening's run: two sealed queries, s1 (candidates u, v; v relevant, grade 2) and s2
# (candidates w, u; w relevant, grade 1, and t relevant, grade 1, not a candidate). nDCG@10 by hand:
# s1: RRF u v (v at 2: 3 / log2 3 over the ideal 3) 0.6309; CE and blend v u 1.0 -> Δ 0, CE > RRF,
#     blend = CE: tie
# s2: ideal 1 + 1 / log2 3 = 1.6309; RRF w u 0.6131, CE u w (w at 2) 0.3869, blend w u 0.6131 -> CE < RRF,
#     blend > CE: repaired
SEALED_RANKINGS = [dict(zip(COLUMNS, row.split())) for row in (
    "s1 u 1 0.5 2 0.25 2", "s1 v 2 1.5 1 1.0 1", "s2 w 1 0.0 2 1.0 1", "s2 u 2 1.0 1 0.5 2")]
SEALED_QRELS = {"s1": {"v": 2}, "s2": {"w": 1, "t": 1}}
SEALED_PER_QUERY = [pq("s1", 1, 1, "0.6309", "1.0", "1.0", ("2", "1", "1")),
                    pq("s2", 2, 1, "0.6131", "0.3869", "0.6131", ("1", "2", "1"))]
OPENING_MD = """# Confirmation analysis — opening 2 of protocol 0123456789ab — `confirm-0123456789ab-test-2`

These are the sealed confirmation queries, opened under the frozen protocol.

## Worst 3 queries of the primary comparison (blend-ce)

| query | Δ |
|---|---|
| s1 | 0.000000 |
| s2 | 0.226200 |
"""


def test_a_confirmation_openings_page_holds_the_browser_of_its_sealed_queries():
    """report.html of an opening (report_html.page of a confirmation report, the browser built from the
    sealed run's hand-made rankings): the same browser as a development run's, over the sealed queries."""
    summary = {**SUMMARY, "worst_primary": [{"qid": "s1"}, {"qid": "s2"}]}
    corpus = {d: Doc(d, f"title {d}", f"text {d}") for d in "tuvw"}
    texts = {"s1": "sealed one", "s2": "sealed two"}
    d = rb.browser_data(summary, SEALED_PER_QUERY, SEALED_RANKINGS, SEALED_QRELS,
                        rb.group_of(["G001"], [["s1", "s2"]]), texts, corpus, "CE logit")
    s1, s2 = d["queries"]
    assert (s1["outcome"], s1["delta"], s1["wtl"], s1["tau"]) == ("tie", 0.0, "T", 1.0)  # v u in both orders
    assert (s2["outcome"], s2["wtl"], s2["tau"]) == ("repaired", "W", -1.0)  # u w against w u
    assert s2["delta"] == pytest.approx(0.2262, abs=1e-12) and s2["missing"] == [["t", 1]]
    assert [[c[0], c[5]] for c in s1["ranked"]] == [["u", None], ["v", 2]]
    assert d["named"] == {"worst": ["s1", "s2"], "repaired": ["s2"], "weakened": []}
    page = report_html.page(OPENING_MD, {}, ["qid"], [["s1"], ["s2"]], section(d), STYLE)
    assert "<title>Confirmation analysis — opening 2 of protocol 0123456789ab — confirm-0123456789ab-test-2" \
           "</title>" in page
    seen = Links()
    seen.feed(page)
    assert seen.data == d
    assert seen.links == ["#query=s1", "#query=s2", "#outcome=repaired", "#query=s2", "#outcome=weakened"]
