"""The query browser of report.html as a person uses it: the fixture's smoke run's page opened from disk in
headless Chromium (Debian's package ``chromium``; the test skips, saying so, where it is not installed),
sorted by Δ, the worst query opened; the three rankings it shows are rankings.tsv's and its relevance
marks qrels.tsv's; the "most different" order is Kendall's tau (scipy) between the CE and blend ranks,
ascending; the view is the address's fragment; at a 1400 px wide viewport the three rankings fit side by side
(their container does not scroll sideways). Screenshots are saved under the test's tmp folder (their
paths printed)."""

import csv

import pytest
from browser import Browser, chromium
from scipy.stats import kendalltau

pytestmark = pytest.mark.slow

ROWS = "[...document.querySelectorAll('#qb-table tbody tr')].map(r => r.dataset.qid)"
# the three rankings' container: [its scroll width, its client width, the viewport's width]
FITS = ("(() => { const r = document.querySelector('#qb-query .qb-rankings'); "
        "return [r.scrollWidth, r.clientWidth, innerWidth]; })()")
PAGE_FITS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
SHOWN = ("[...document.querySelectorAll('#qb-query table[data-method]')].map(t => [t.dataset.method, "
         "[...t.querySelectorAll('tbody tr')].map(r => [r.dataset.doc, r.dataset.grade])])")


def table(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def expected_rankings(rundir, qid):
    """The three orders of ``qid`` from rankings.tsv, each document with its qrels.tsv grade ('' unjudged)."""
    rows = [r for r in table(rundir / "rankings.tsv") if r["qid"] == qid]
    grades = {r["corpus-id"]: r["score"] for r in table(rundir / "inputs/qrels.tsv") if r["query-id"] == qid}
    return {m: [[r["doc_id"], grades.get(r["doc_id"], "")] for r in sorted(rows, key=lambda r: int(r[col]))]
            for m, col in (("rrf", "r0"), ("ce", "r1"), ("blend", "blend_rank"))}


def by_delta(rundir):
    """The queries by primary Δ (blend - ce) ascending, ties in per_query.tsv's order."""
    rows = table(rundir / "per_query.tsv")
    delta = [float(r["blend_ndcg@10"]) - float(r["ce_ndcg@10"]) for r in rows]
    return [rows[i]["qid"] for i in sorted(range(len(rows)), key=lambda i: (delta[i], i))]


@pytest.fixture
def browser():
    if chromium() is None:
        pytest.skip("no Chromium to render the report in (Debian: apt-get install chromium)")
    b = Browser(chromium())
    yield b
    b.close()


def test_sort_by_delta_open_the_worst_query_and_see_the_runs_rankings(smoke_run, browser, tmp_path):
    browser.open((smoke_run / "report.html").as_uri())
    browser.viewport(1400, 900)
    browser.wait_for("document.querySelectorAll('#qb-table tbody tr').length > 0")
    browser.evaluate("document.querySelector('#qb-table th[data-key=delta]').click()")
    browser.wait_for("location.hash.includes('sort=delta')")
    order = browser.evaluate(ROWS)
    assert order == by_delta(smoke_run)
    worst = order[0]
    browser.evaluate("document.querySelector('#qb-table tbody tr a.qb-open').click()")
    browser.wait_for("!document.getElementById('qb-query').hidden")
    assert f"query={worst}" in browser.evaluate("location.hash")
    want = expected_rankings(smoke_run, worst)
    shown = dict(browser.evaluate(SHOWN))
    assert shown == {m: docs[:10] for m, docs in want.items()}  # the top 10 by default
    scroll, client, width = browser.evaluate(FITS)  # side by side without a sideways scroll
    assert width == 1400 and scroll <= client, (scroll, client)
    assert browser.evaluate(PAGE_FITS)  # nor the page (the per-query table scrolls in its own box)
    print("screenshot of the worst query:", browser.screenshot(tmp_path / "query_browser_worst.png"))
    browser.evaluate("document.getElementById('qb-depth').click()")  # every candidate
    browser.wait_for("location.hash.includes('depth=all')")
    assert dict(browser.evaluate(SHOWN)) == want
    scroll, client, width = browser.evaluate(FITS)
    assert width == 1400 and scroll <= client, (scroll, client)
    qrels = {r["corpus-id"]: int(r["score"]) for r in table(smoke_run / "inputs/qrels.tsv")
             if r["query-id"] == worst}
    outside = sorted(d for d, g in qrels.items() if g > 0 and d not in {d for d, _ in want["rrf"]})
    listed = browser.evaluate("[...document.querySelectorAll('#qb-missing tr')].map(r => r.dataset.doc)")
    assert sorted(listed or []) == outside


def test_the_most_different_order_is_kendall_tau_ascending_and_the_view_is_the_fragment(smoke_run, browser,
                                                                                      tmp_path):
    rows = table(smoke_run / "rankings.tsv")
    qids = [r["qid"] for r in table(smoke_run / "per_query.tsv")]
    tau = {q: kendalltau([int(r["r1"]) for r in rows if r["qid"] == q],
                         [int(r["blend_rank"]) for r in rows if r["qid"] == q]).statistic for q in qids}
    browser.open((smoke_run / "report.html").as_uri())
    browser.wait_for("!!document.getElementById('qb-most-different')")
    browser.evaluate("document.getElementById('qb-most-different').click()")
    browser.wait_for("location.hash.includes('sort=tau')")
    shown = browser.evaluate(ROWS)
    assert [round(tau[q], 9) for q in shown] == sorted(round(t, 9) for t in tau.values())
    target = qids[-1]
    browser.open((smoke_run / "report.html").as_uri() + f"#depth=all&query={target}")
    browser.wait_for("!document.getElementById('qb-query').hidden")
    assert dict(browser.evaluate(SHOWN)) == expected_rankings(smoke_run, target)
    print("screenshot of a query opened by its address:",
          browser.screenshot(tmp_path / "query_by_address.png"))
