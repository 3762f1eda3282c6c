"""Check 'report_html': report.html shows what the audited report.md and per_query.tsv say, and nothing else
(docs/outputs.md, "report.html"). Compared: the page's visible text (every text node of its body, whitespace
collapsed) with report.md's text read as the documented markdown subset followed by the per-query heading and
per_query.tsv's cells; its images, in order, with the run's figures as PNG data URIs; its stylesheet with the
documented one; every element and attribute against an allowlist (no script, no style attribute, no link out
of the page). Written from the documentation, with html.parser; not from the pipeline's report_html module."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

from readers import bytes_of, text_of

CHECK = "report_html"
PER_QUERY_HEADING = "Per-query results (per_query.tsv)"
STYLE = ("body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 "
         "1rem;line-height:1.45}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}"
         "th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:right}"
         "th:first-child,td:first-child{text-align:left}thead th{background:#eee;position:sticky;top:0}"
         "blockquote{border-left:.3rem solid #c00;margin:1rem 0;padding:.2rem 1rem;background:#fee}"
         "img{max-width:100%}code{font-size:.9em}")
ATTRIBUTES = {"html": {"lang"}, "meta": {"charset"}, "img": {"src", "alt"}, "ol": {"start"}}
ELEMENTS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul",
            "ol", "li", "blockquote", "table", "thead", "tbody", "tr", "th", "td", "strong", "em", "code",
            "img", "br", "hr"}
VOID = {"meta", "img", "br", "hr"}
INLINE = {"strong", "em", "code"}  # no word boundary at these (every other element separates words)
FIGURES = ("figures/forest.png", "figures/primary_delta.png", "figures/power_curve.png")
SEPARATOR = re.compile(r"\|(?:\s*:?-+:?\s*\|)+")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
MARKERS = re.compile(r"^(?:#{1,6}\s+|>\s?|[-*+]\s+|[0-9]+[.)]\s+)")


class Page(HTMLParser):
    """The visible text, the image sources, the stylesheet and the elements or attributes outside the
    allowlist."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.images, self.style, self.refused, self.open = [], [], [], [], []
        self.cells: list[str] = []  # each table cell's text, in order
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        extra = [k for k, _ in attrs if k not in ATTRIBUTES.get(tag, set())]
        if tag not in ELEMENTS or extra:
            self.refused.append(f"<{tag}>" + (f" with {extra}" if extra else ""))
        if tag == "img":
            self.images.append(dict(attrs).get("src"))
        if tag not in VOID:
            self.open.append(tag)
        if tag in ("td", "th"):
            if self._cell is not None:
                self.refused.append(f"<{tag}> inside a cell")
            self._cell = []
        self.text.append("" if tag in INLINE else " ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.refused.append(f"</{tag}> out of order")
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append(collapsed("".join(self._cell)))
            self._cell = None
        self.text.append("" if tag in INLINE else " ")

    def handle_data(self, data):
        if "style" in self.open:
            self.style.append(data)
        elif "body" in self.open:
            self.text.append(data)
            if self._cell is not None:
                self._cell.append(data)
        elif data.strip() and "title" not in self.open:
            self.refused.append(f"text outside the body: {data.strip()[:40]!r}")

    def handle_comment(self, data):
        self.refused.append("a comment")

    def handle_pi(self, data):
        self.refused.append("a processing instruction")


def collapsed(text: str) -> str:
    return " ".join(text.split())


def markdown_cells(markdown: str) -> list[str]:
    """Every table cell of report.md, in order (the separator rows dropped), as the page shows it."""
    cells = []
    for line in markdown.split("\n"):
        s = line.strip()
        if s.startswith("|") and s.endswith("|") and not SEPARATOR.fullmatch(s):
            cells += [collapsed(c.replace("**", "").replace("`", "")) for c in s[1:-1].split("|")]
    return cells


def markdown_text(markdown: str) -> tuple[str, list[str]]:
    """(the visible text, the image paths) of report.md: headings, quotes, list items and paragraphs without
    their markers, table rows as their cells (the separator row dropped), ``**`` and backticks removed."""
    words, images = [], []
    for line in markdown.split("\n"):
        s = line.strip()
        if not s or SEPARATOR.fullmatch(s):
            continue
        found = IMAGE.findall(s)
        if found and not IMAGE.sub("", s).strip():
            images += found
            continue
        if s.startswith("|") and s.endswith("|"):
            s = " ".join(c.strip() for c in s[1:-1].split("|"))
        words.append(MARKERS.sub("", s).replace("**", "").replace("`", ""))
    return collapsed(" ".join(words)), images


def per_query_text(tsv: str) -> str:
    return collapsed(" ".join(line.replace("\t", " ") for line in tsv.split("\n")))


def check_report_html(run, want, au) -> None:
    path, f = run.path("report_html"), str(run.path("report_html"))
    page = Page()
    page.feed(text_of(path, newline=""))
    page.close()
    md_text, md_images = markdown_text(text_of(run.path("report"), newline=""))
    expect = collapsed(f"{md_text} {PER_QUERY_HEADING} {per_query_text(text_of(run.path('per_query')))}")
    found = collapsed("".join(page.text))
    i = next((i for i, (a, b) in enumerate(zip(expect, found)) if a != b), min(len(expect), len(found)))
    au.check(CHECK, found == expect, f, f"the visible text (first difference at character {i})",
             expect[max(0, i - 40):i + 40], found[max(0, i - 40):i + 40])
    tsv_cells = [c for line in text_of(run.path("per_query")).split("\n") if line for c in line.split("\t")]
    expect_cells = markdown_cells(text_of(run.path("report"), newline="")) + [collapsed(c) for c in tsv_cells]
    j = next((j for j, (a, b) in enumerate(zip(expect_cells, page.cells)) if a != b),
             min(len(expect_cells), len(page.cells)))
    au.check(CHECK, page.cells == expect_cells, f, f"table cells, one by one (first difference at cell {j})",
             expect_cells[j:j + 3], page.cells[j:j + 3])
    au.check(CHECK, all(p in FIGURES for p in md_images), str(run.path("report")), "figure links",
             list(FIGURES), md_images)
    uris = ["data:image/png;base64," + base64.b64encode(bytes_of(run.rundir / p)).decode("ascii")
            for p in md_images if p in FIGURES]
    au.check(CHECK, page.images == uris, f, "images: the run's figures inlined, in report.md's order",
             [u[:40] + "..." for u in uris], [str(u)[:40] + "..." for u in page.images])
    au.check(CHECK, "".join(page.style) == STYLE, f, "the stylesheet", STYLE, "".join(page.style))
    au.check(CHECK, not page.refused, f, "elements and attributes (the allowlist)", [], page.refused[:10])
