"""The run report as one self-contained HTML page (``report.html``, written by rule report beside report.md):
report.md's markdown subset rendered by the fixed rules of docs/outputs.md ("report.html"), its figures
inlined as PNG data URIs (the page shows them wherever it is opened, the Snakemake report's viewer included),
the per-query table (per_query.tsv) appended, then the query browser (``report_browser_page``: its data
as JSON and a script of its own). Nothing is loaded from outside the page. The page is a deterministic
function of report.md, per_query.tsv, the figures and the browser's data; the audit checks its manifest hash,
and every value of the browser's data against the run's files (check report_browser).

``document`` is the same renderer for any markdown file of these rules with its figures (the synthesis across
datasets' ``synthesis.html``: synthesis.md with forest.png); a refusal names that file.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence

from ..core.errors import PipelineError

PER_QUERY_HEADING = "Per-query results (per_query.tsv)"
STYLE = ("body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 "
         "1rem;line-height:1.45}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}"
         "th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:right}"
         "th:first-child,td:first-child{text-align:left}thead th{background:#eee;position:sticky;top:0}"
         "blockquote{border-left:.3rem solid #c00;margin:1rem 0;padding:.2rem 1rem;background:#fee}"
         "img{max-width:100%}code{font-size:.9em}.wide{overflow:auto;max-height:90vh}")
HEADING = re.compile(r"(#{1,6}) (.*)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
SEPARATOR = re.compile(r"\|(?:-+\|)+")


def escape(text: str) -> str:
    return html.escape(text, quote=False)


def strong(escaped: str) -> str:
    """``**x**`` pairs as <strong>x</strong> (an odd count of ``**``: left as written)."""
    pieces = escaped.split("**")
    if len(pieces) % 2 == 0:
        return escaped
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(pieces))


def inline(text: str) -> str:
    """Backtick pairs as <code> (their text escaped only), ``**`` pairs outside them as <strong>."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        parts = [text]
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else strong(escape(p)) for i, p in enumerate(parts))


def table(rows: Sequence[Sequence[str]]) -> str:
    """A header row and body rows of cell texts already rendered."""
    head = "".join(f"<th>{c}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>\n" for row in rows[1:])
    return f"<table>\n<thead>\n<tr>{head}</tr>\n</thead>\n<tbody>\n{body}</tbody>\n</table>"


def cells(line: str) -> list[str]:
    return [inline(c.strip()) for c in line.strip()[1:-1].split("|")]


def image(line: str, figures: Mapping[str, bytes], source: str = "report.md") -> str:
    alt, path = IMAGE.fullmatch(line).groups()
    if path not in figures:
        raise PipelineError(f"{source} links the figure {path!r}, which is not one of its figures "
                            f"{sorted(figures)}")
    uri = "data:image/png;base64," + base64.b64encode(figures[path]).decode("ascii")
    return f'<p><img src="{uri}" alt="{html.escape(alt, quote=True)}"></p>'


def kind_of(line: str) -> str:
    s = line.strip()
    if not s:
        return "blank"
    if HEADING.fullmatch(s):
        return "heading"
    if IMAGE.fullmatch(s):
        return "image"
    for prefix, kind in ((">", "quote"), ("- ", "list"), ("|", "table")):
        if s.startswith(prefix):
            return kind
    return "paragraph"


def group(lines: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Runs of consecutive lines of one kind (a heading or an image: one line each)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        kind = kind_of(line)
        if blocks and blocks[-1][0] == kind and kind not in ("heading", "image", "blank"):
            blocks[-1][1].append(line.strip())
        else:
            blocks.append((kind, [line.strip()]))
    return [b for b in blocks if b[0] != "blank"]


def block(kind: str, lines: list[str], figures: Mapping[str, bytes], source: str = "report.md") -> str:
    if kind == "heading":
        hashes, text = HEADING.fullmatch(lines[0]).groups()
        return f"<h{len(hashes)}>{inline(text)}</h{len(hashes)}>"
    if kind == "image":
        return image(lines[0], figures, source)
    if kind == "quote":
        text = "\n".join(inline(x[1:].lstrip(" ")) for x in lines)
        return f"<blockquote>\n<p>{text}</p>\n</blockquote>"
    if kind == "list":
        return "<ul>\n" + "".join(f"<li>{inline(x[2:])}</li>\n" for x in lines) + "</ul>"
    if kind == "table":
        if len(lines) < 2 or not SEPARATOR.fullmatch(lines[1]):
            raise PipelineError(f"{source}: the table starting {lines[0][:60]!r} has no separator row")
        return table([cells(lines[0]), *(cells(x) for x in lines[2:])])
    return "<p>" + "\n".join(inline(x) for x in lines) + "</p>"


def body(markdown: str, figures: Mapping[str, bytes], source: str = "report.md") -> str:
    return "\n".join(block(kind, lines, figures, source)
                     for kind, lines in group(markdown.split("\n"))) + "\n"


def title_of(markdown: str) -> str:
    first = markdown.split("\n", 1)[0]
    return first[2:].replace("`", "") if first.startswith("# ") else "Run report"


def document(markdown: str, figures: Mapping[str, bytes], title: str, after: str = "", style: str = "",
             source: str = "report.md") -> str:
    """One self-contained page: ``markdown`` (the text of the file ``source``, named in a refusal) rendered by
    the rules above, its figures ({link path: PNG bytes}) inlined, ``after`` (HTML) appended to its body,
    ``style`` after STYLE."""
    if "\r" in markdown:
        raise PipelineError(f"{source} holds a carriage return: its lines end in a newline only")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{STYLE}{style}</style>\n</head>\n<body>\n"
            f"{body(markdown, figures, source)}{after}</body>\n</html>\n")


def page(markdown: str, figures: Mapping[str, bytes], per_query_header: Sequence[str],
         per_query_rows: Sequence[Sequence[str]], browser: str = "", browser_style: str = "") -> str:
    """report.html from report.md's text, its figures ({link path: PNG bytes}) and per_query.tsv's cells;
    ``browser``: the query browser's section (HTML), placed last, ``browser_style`` its style."""
    per_query = table([[escape(c) for c in per_query_header],
                       *([escape(c) for c in r] for r in per_query_rows)])
    after = f"<h2>{escape(PER_QUERY_HEADING)}</h2>\n<div class=\"wide\">{per_query}</div>\n{browser}"
    return document(markdown, figures, title_of(markdown), after, browser_style)
