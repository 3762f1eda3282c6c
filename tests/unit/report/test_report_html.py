"""report.html (rerank_study.report.report_html) of a tiny report: what a reader sees in it, read back with
the standard library's html.parser; what the renderer refuses."""

import base64
import html.parser

import pytest

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
    # the per-query table (many columns) scrolls sideways in a box of its own, not the page
    assert "</h2>\n<div class=\"wide\"><table>" in page() and ".wide{overflow:auto;" in page()
    assert seen.images == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    assert "script" not in seen.tags and "a" not in seen.tags


def test_raw_html_in_the_report_is_shown_as_text_never_run():
    text = report_html.page("# t\n\nA <script>alert(1)</script> here.\n", {}, HEADER, [])
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_carriage_return_in_report_md_is_refused():
    """A lone CR joining two table rows (a line end to one reader, text to another)."""
    forged = MARKDOWN.replace("|---|---|---|\n", "|---|---|---|\r")
    with pytest.raises(PipelineError, match="carriage return"):
        report_html.page(forged, {"figures/forest.png": PNG}, HEADER, ROWS)


def test_a_figure_the_run_does_not_hold_is_refused():
    with pytest.raises(PipelineError, match="report.md links the figure 'figures/other.png', which is not "
                                            "one of its figures"):
        report_html.page(MARKDOWN.replace("figures/forest.png", "figures/other.png"),
                         {"figures/forest.png": PNG}, HEADER, ROWS)
