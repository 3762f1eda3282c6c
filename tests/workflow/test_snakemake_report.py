"""The results browser as a person sees it: ``snakemake --report`` on the fixture's smoke run, rendered in
headless Chromium (Debian's package ``chromium``; the test skips, saying so, where it is not installed). The
report lists the results by subject; the run report's caption carries the STAND-IN banner; the run report
itself, opened from the report, shows the primary comparison's interval as summary.json holds it, the banner
and the per-query table."""

import json
import time

import pytest
from browser import Browser, chromium
from conftest import run_snakemake, world_lock

pytestmark = pytest.mark.slow

CLICK_LINK = "(t => { const a = [...document.querySelectorAll('a')].find(e => e.textContent.trim() == t); " \
             "if (a) a.click(); return !!a; })"
# the icons beside a result's name: 0 shows the file, 1 its caption and job
CLICK_ICON = ("(i => { const name = [...document.querySelectorAll('*')].find(e => e.children.length == 0 && "
              "e.textContent.trim().endsWith('/report.html')); const a = "
              "name.parentElement.querySelectorAll('a'); a[i].click(); return a.length; })")
TEXT = "document.body.innerText"


@pytest.fixture(scope="module")
def snakemake_report(smoke_run, tmp_path_factory):
    if chromium() is None:
        pytest.skip("no Chromium to render the report in (Debian: apt-get install chromium)")
    out = tmp_path_factory.mktemp("report") / "report.html"
    with world_lock(smoke_run.parents[1]):  # the shared work folder: no fixture run made in it meanwhile
        run_snakemake(smoke_run.parents[1], "--report", str(out), config={"smoke": "true"})
    return out


def test_the_report_lists_the_results_by_subject_with_the_standin_caption(snakemake_report, tmp_path):
    browser = Browser(chromium())
    try:
        browser.open(snakemake_report.as_uri())
        browser.wait_for(f"{TEXT}.includes('Tables')")
        categories = browser.evaluate(f"{TEXT}")
        assert all(c in categories for c in ("Report", "Figures", "Tables", "Calibration")), categories
        assert browser.evaluate(CLICK_LINK + "('Report')")
        browser.wait_for(f"{TEXT}.includes('/report.html')")
        browser.evaluate(CLICK_ICON + "(1)")
        caption = browser.wait_for(f"{TEXT}.includes('DESCRIPTION') && {TEXT}")
        assert "STAND-IN SCORER." in caption and "the sealed confirmation set decides" in caption
        print("screenshot of the caption:", browser.screenshot(tmp_path / "caption.png"))
    finally:
        browser.close()


def test_the_run_report_opened_from_the_report_shows_the_primary_interval_and_banner(snakemake_report,
                                                                                     smoke_run, tmp_path):
    summary = json.loads((smoke_run / "summary.json").read_text())
    primary = summary["comparisons"][summary["primary"]]
    lo, hi = primary["grouped_interval"]
    browser = Browser(chromium())
    try:
        browser.open(snakemake_report.as_uri())
        browser.wait_for(f"{TEXT}.includes('Tables')")
        browser.evaluate(CLICK_LINK + "('Report')")
        browser.wait_for(f"{TEXT}.includes('/report.html')")
        browser.evaluate(CLICK_ICON + "(0)")
        browser.wait_for("document.querySelectorAll('iframe').length > 0")
        shown = ""
        for _ in range(50):  # the frame loads its data URI after the click
            shown = browser.evaluate_in_frame(TEXT) or ""
            if "Per-query results" in shown:
                break
            time.sleep(0.2)
        print("screenshot of the run report:", browser.screenshot(tmp_path / "run_report.png"))
    finally:
        browser.close()
    assert f"grouped interval [{lo:.6f}, {hi:.6f}]" in shown
    assert "STAND-IN SCORER." in shown
    first_query = (smoke_run / "per_query.tsv").read_text().splitlines()[1].split("\t")[0]
    assert "Per-query results (per_query.tsv)" in shown and f"\n{first_query}\t" in shown
