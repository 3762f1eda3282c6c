"""The run report as one self-contained HTML page (``report.html``, written by rule report beside report.md):
report.md rendered by markdown-it-py (CommonMark with tables; raw HTML in the text is escaped, never passed
through), its figures inlined as PNG data URIs (the page shows them wherever it is opened, the Snakemake
report's viewer included), and the per-query table (per_query.tsv) appended as a browsable table. No script,
no link to anything outside the page. The layout is docs/outputs.md ("report.html").
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence

from markdown_it import MarkdownIt

PER_QUERY_HEADING = "Per-query results (per_query.tsv)"
STYLE = ("body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 "
         "1rem;line-height:1.45}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}"
         "th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:right}"
         "th:first-child,td:first-child{text-align:left}thead th{background:#eee;position:sticky;top:0}"
         "blockquote{border-left:.3rem solid #c00;margin:1rem 0;padding:.2rem 1rem;background:#fee}"
         "img{max-width:100%}code{font-size:.9em}")


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def inline_figures(markdown: str, figures: Mapping[str, bytes]) -> str:
    """The markdown with each figure link ``](<path>)`` pointing at the figure's bytes instead."""
    for path, png in figures.items():
        markdown = markdown.replace(f"]({path})", f"]({data_uri(png)})")
    return markdown


def table_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>\n" for row in rows)
    return f"<table>\n<thead>\n<tr>{head}</tr>\n</thead>\n<tbody>\n{body}</tbody>\n</table>\n"


def title_of(markdown: str) -> str:
    first = markdown.split("\n", 1)[0]
    return first.lstrip("#").strip().replace("`", "") if first.startswith("# ") else "Run report"


def page(markdown: str, figures: Mapping[str, bytes], per_query_header: Sequence[str],
         per_query_rows: Sequence[Sequence[str]]) -> str:
    """report.html from report.md's text, its figures ({link path: PNG bytes}) and per_query.tsv's cells."""
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(inline_figures(markdown, figures))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title_of(markdown))}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{body}<h2>{html.escape(PER_QUERY_HEADING)}</h2>\n{table_html(per_query_header, per_query_rows)}"
            "</body>\n</html>\n")
