"""report.html (rerank_study.report.report_html) of a tiny report: what a reader sees in it, read back with
the
standard library's html.parser (not with the audit's parser); and the audit's check of it ('report_html')
passes the page and fails every forgery the red team made of it."""

import base64
import html.parser
import types

import pytest
from conftest import audit_module

from rerank_study.core.errors import PipelineError
from rerank_study.report import report_html

MARKDOWN = """# Development analysis — `tiny`

> **STAND-IN SCORER.** The numbers say nothing about the pinned model.

Primary comparison **blend-ce**: mean Δ = 0.25; grouped interval [0.062500, 0.437500].

| comparison | mean Δ | grouped interval |
|---|---|---|
| blend-ce (primary) | 0.250000 | [0.062500, 0.437500] |

- CE losses against RRF: 1; repaired by the blend (blend > CE): 1.

![forest plot](figures/forest.png)
"""
PNG = b"\x89PNG\r\n\x1a\nnot really a picture"
HEADER = ["qid", "rrf_ndcg@10", "ce_ndcg@10"]
ROWS = [["q1", "0.5", "1.0"], ["q2", "0.25", "0.0"]]


class Seen(html.parser.HTMLParser):
    """The text of each table cell and each heading, the image sources and every tag, as a browser shows
    them."""

    def __init__(self):
        super().__init__()
        self.cells, self.headings, self.images, self.tags, self._in = [], [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "th", "h1", "h2", "blockquote"):
            self._in, self._text = tag, ""
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_data(self, data):
        if self._in:
            self._text += data

    def handle_endtag(self, tag):
        if tag == self._in:
            (self.cells if tag in ("td", "th") else self.headings).append((tag, " ".join(self._text.split())))
            self._in = None


def page():
    return report_html.page(MARKDOWN, {"figures/forest.png": PNG}, HEADER, ROWS)


def test_the_page_shows_the_reports_tables_banner_figure_and_the_per_query_table():
    seen = Seen()
    seen.feed(page())
    assert ("h1", "Development analysis — tiny") in seen.headings
    assert ("blockquote", "STAND-IN SCORER. The numbers say nothing about the pinned model.") in seen.headings
    assert [c for _, c in seen.cells[:6]] == ["comparison", "mean Δ", "grouped interval",
                                             "blend-ce (primary)", "0.250000", "[0.062500, 0.437500]"]
    assert ("h2", "Per-query results (per_query.tsv)") in seen.headings
    assert [c for _, c in seen.cells[6:]] == [*HEADER, *ROWS[0], *ROWS[1]]
    assert seen.images == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    assert "script" not in seen.tags and "a" not in seen.tags


def test_raw_html_in_the_report_is_shown_as_text_never_run():
    text = report_html.page("# t\n\nA <script>alert(1)</script> here.\n", {}, HEADER, [])
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def audit_of(html_text, tmp_path, markdown=MARKDOWN):
    """The audit's check on a run folder holding the tiny report, its figure, per_query.tsv and
    ``html_text``."""
    (tmp_path / "figures").mkdir(exist_ok=True)
    files = {"report": ("report.md", markdown), "per_query": ("per_query.tsv", "".join(
        "\t".join(r) + "\n" for r in [HEADER, *ROWS])), "report_html": ("report.html", html_text)}
    for name, text in files.values():
        (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    (tmp_path / "figures/forest.png").write_bytes(PNG)
    run = types.SimpleNamespace(rundir=tmp_path, path=lambda key: tmp_path / files[key][0])
    failures = []
    au = types.SimpleNamespace(check=lambda name, ok, file, item, expected=None, found=None:
                               ok or failures.append(item))
    audit_module("checks_report_html").check_report_html(run, None, au)
    return failures


# the red team's forgeries of a page (each passed the audit's earlier, parser-based check)
FORGERIES = {
    "a number changed": lambda t: t.replace("0.437500]</td>", "0.537500]</td>", 1),
    "a number moved under the next column": lambda t: t.replace(
        "<td>blend-ce (primary)</td>\n<td>", "<td>blend-ce (primary) ", 1).replace("0.437500]</td>",
                                                                            "0.437500]</td>\n<td></td>", 1),
    "the banner hidden in a <title> inside the body": lambda t: t.replace("<blockquote>",
                                                                          "<title><blockquote>", 1)
    .replace("</blockquote>", "</blockquote></title>", 1),
    "a claim in the head's <title>": lambda t: t.replace("<title>", "<title>CONFIRMED: ", 1),
    "a second src on the figure (a browser shows the first)": lambda t: t.replace(
        '<img src="', '<img src="data:image/svg+xml;base64,Zm9yZ2Vk" src="', 1),
    "the figure's alt text": lambda t: t.replace('alt="forest plot"', 'alt="blend beats CE"', 1),
    "another character set": lambda t: t.replace('charset="utf-8"', 'charset="windows-1252"', 1),
    "the stylesheet split in two": lambda t: t.replace("}blockquote{", "}block</style><style>quote{", 1),
    "an onclick attribute": lambda t: t.replace("<h2>", '<h2 onclick="x()">', 1),
}


def test_the_audit_passes_the_page_and_fails_each_forgery_naming_the_line(tmp_path):
    assert audit_of(page(), tmp_path) == []
    for what, forge in FORGERIES.items():
        forged = forge(page())
        assert forged != page(), what
        failures = audit_of(forged, tmp_path)
        assert len(failures) == 1 and failures[0].startswith("the whole page (first "
                                                             "difference at line "), what


def test_a_carriage_return_in_report_md_fails_both_renderers(tmp_path):
    """The second red team's forgery: a lone CR joining two table rows (a line end to one reader, text to the
    other) in report.md, with a page rendered from it; the audit refuses the report's line ends."""
    forged = MARKDOWN.replace("|---|---|---|\n", "|---|---|---|\r")
    with pytest.raises(PipelineError, match="carriage return"):
        report_html.page(forged, {"figures/forest.png": PNG}, HEADER, ROWS)
    with pytest.raises(audit_module("problems").Unreadable, match="carriage return"):
        audit_of(page(), tmp_path, markdown=forged)


def test_a_figure_the_run_does_not_hold_is_refused_by_both_renderers(tmp_path):
    with pytest.raises(PipelineError, match="not one of the run's figures"):
        report_html.page(MARKDOWN.replace("figures/forest.png", "figures/other.png"),
                         {"figures/forest.png": PNG}, HEADER, ROWS)
