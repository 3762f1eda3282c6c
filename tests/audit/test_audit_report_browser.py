"""The audit's check 'report_browser' on copies of the fixture's smoke run: the honest page passes; every edit
of a value the query browser embeds - a rank, a score, a judgement, a text, a query left out - with the
manifest re-hashed (so no hash check can be what catches it) fails 'report_browser' and only it, naming the
query and the row; an edit of the markup or the script alone is not the audit's business and passes."""

from __future__ import annotations

import json
import re

import pytest
from run_copies import rehash_manifest, run_audit

DATA = re.compile(r'(<script type="application/json" id="qb-data">)(.*?)(</script>)', re.S)


def edit_data(rundir, change) -> None:
    page = rundir / "report.html"
    text = page.read_text(encoding="utf-8")
    head, raw, tail = DATA.search(text).groups()
    data = json.loads(raw)
    change(data)
    new = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    page.write_text(text.replace(head + raw + tail, head + new + tail), encoding="utf-8")


def first(data):
    return data["queries"][0]


EDITS = {
    "ce_rank": (lambda d: first(d)["ranked"][0].__setitem__(1, first(d)["ranked"][0][1] + 1), "ranked row 1"),
    "blend_score": (lambda d: first(d)["ranked"][1].__setitem__(4, 2 * first(d)["ranked"][1][4]),
                    "ranked row 2"),
    "logit": (lambda d: first(d)["ranked"][2].__setitem__(3, 0.125), "ranked row 3"),
    "judgement": (lambda d: first(d)["ranked"][3].__setitem__(5, 2), "ranked row 4"),
    "delta": (lambda d: first(d).__setitem__("delta", first(d)["delta"] + 0.5), ": delta"),
    "tau": (lambda d: first(d).__setitem__("tau", -1.0), ": tau"),
    "outcome": (lambda d: first(d).__setitem__("outcome", "weakened"), ": outcome"),
    "group": (lambda d: first(d).__setitem__("group_size", 7), ": group_size"),
    "title": (lambda d: d["docs"].__setitem__(next(iter(d["docs"])), ["another title", "text"]), "docs"),
    "query_left_out": (lambda d: d["queries"].pop(), "queries"),
    "worst": (lambda d: d["named"]["worst"].reverse(), "named"),
}


def test_the_honest_page_passes_report_browser(copy_of):
    rundir = copy_of("smoke")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, proc.stdout[-3000:]
    check = result["checks"]["report_browser"]
    assert check["failures"] == 0 and check["checked"] > 50, check


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_value_fails_report_browser_only(copy_of, name):
    change, item = EDITS[name]
    rundir = copy_of("smoke")
    edit_data(rundir, change)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and result["failed_checks"] == ["report_browser"], result["failed_checks"]
    failures = result["checks"]["report_browser"]["first_failures"]
    assert any(item in f["item"] for f in failures), failures


def test_the_markup_and_the_script_are_not_compared(copy_of):
    rundir = copy_of("smoke")
    page = rundir / "report.html"
    page.write_text(page.read_text(encoding="utf-8").replace("Query browser</h2>", "Queries</h2>")
                    .replace('"use strict";', '"use strict"; var unused = 1;'), encoding="utf-8")
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, result["failed_checks"]
