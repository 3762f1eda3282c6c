"""Check 'report_html': report.html is the page docs/outputs.md ("report.html") defines from the run's
report.md, per_query.tsv and figures, byte for byte: the audit renders it with its own code, written from that
documentation (not from the pipeline's report_html module), and a differing byte fails, naming the first
differing line. So the page shows what the audited files say and nothing else: no other element, attribute,
style, title or image can be in it."""

from __future__ import annotations

import base64
import re

from readers import bytes_of, text_of

CHECK = "report_html"
PER_QUERY_HEADING = "Per-query results (per_query.tsv)"
STYLE = ("body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 "
         "1rem;line-height:1.45}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}"
         "th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:right}"
         "th:first-child,td:first-child{text-align:left}thead th{background:#eee;position:sticky;top:0}"
         "blockquote{border-left:.3rem solid #c00;margin:1rem 0;padding:.2rem 1rem;background:#fee}"
         "img{max-width:100%}code{font-size:.9em}")
FIGURES = ("figures/forest.png", "figures/primary_delta.png", "figures/power_curve.png")
HEAD = re.compile(r"(#{1,6}) (.*)")
PICTURE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
RULE_ROW = re.compile(r"\|(?:-+\|)+")


def esc(text: str, attribute: bool = False) -> str:
    out = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return out.replace('"', "&quot;").replace("'", "&#x27;") if attribute else out


def md_inline(text: str) -> str:
    spans = text.split("`")
    if len(spans) % 2 == 0:
        spans = [text]
    out = []
    for i, span in enumerate(spans):
        if i % 2:
            out.append("<code>" + esc(span) + "</code>")
            continue
        bold = esc(span).split("**")
        out.append(esc(span) if len(bold) % 2 == 0 else
                   "".join("<strong>" + b + "</strong>" if k % 2 else b for k, b in enumerate(bold)))
    return "".join(out)


def line_kind(s: str) -> str:
    if not s:
        return "blank"
    if HEAD.fullmatch(s):
        return "heading"
    if PICTURE.fullmatch(s):
        return "image"
    if s.startswith(">"):
        return "quote"
    if s.startswith("- "):
        return "list"
    return "table" if s.startswith("|") else "paragraph"


def html_table(rows: list[list[str]]) -> str:
    out = ["<table>", "<thead>", "<tr>" + "".join("<th>" + c + "</th>" for c in rows[0]) + "</tr>",
           "</thead>", "<tbody>"]
    body = "".join("<tr>" + "".join("<td>" + c + "</td>" for c in r) + "</tr>\n" for r in rows[1:])
    return "\n".join(out) + "\n" + body + "</tbody>\n</table>"


def render_block(kind: str, lines: list[str], pngs: dict) -> str:
    if kind == "heading":
        level, text = HEAD.fullmatch(lines[0]).groups()
        return f"<h{len(level)}>" + md_inline(text) + f"</h{len(level)}>"
    if kind == "image":
        alt, path = PICTURE.fullmatch(lines[0]).groups()
        uri = "data:image/png;base64," + base64.b64encode(pngs[path]).decode("ascii")
        return '<p><img src="' + uri + '" alt="' + esc(alt, attribute=True) + '"></p>'
    if kind == "quote":
        return "<blockquote>\n<p>" + "\n".join(md_inline(x[1:].lstrip(" ")) for x in lines) + \
            "</p>\n</blockquote>"
    if kind == "list":
        return "<ul>\n" + "".join("<li>" + md_inline(x[2:]) + "</li>\n" for x in lines) + "</ul>"
    if kind == "table":
        if len(lines) < 2 or not RULE_ROW.fullmatch(lines[1]):
            raise ValueError("report.md: a table without its separator row: " + lines[0][:60])
        return html_table([[md_inline(c.strip()) for c in x[1:-1].split("|")]
                           for x in [lines[0], *lines[2:]]])
    return "<p>" + "\n".join(md_inline(x) for x in lines) + "</p>"


def expected_page(markdown: str, tsv: str, pngs: dict) -> str:
    blocks: list[tuple[str, list[str]]] = []
    for raw in markdown.split("\n"):
        s, kind = raw.strip(), line_kind(raw.strip())
        if blocks and blocks[-1][0] == kind and kind in ("quote", "list", "table", "paragraph"):
            blocks[-1][1].append(s)
        else:
            blocks.append((kind, [s]))
    body = "\n".join(render_block(k, ls, pngs) for k, ls in blocks if k != "blank") + "\n"
    first = markdown.split("\n", 1)[0]
    title = first[2:].replace("`", "") if first.startswith("# ") else "Run report"
    rows = [[esc(c) for c in line.split("\t")] for line in tsv.split("\n") if line]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + esc(title)
            + "</title>\n<style>" + STYLE + "</style>\n</head>\n<body>\n" + body + "<h2>"
            + esc(PER_QUERY_HEADING)
            + "</h2>\n" + html_table(rows) + "\n</body>\n</html>\n")


def check_report_html(run, want, au) -> None:
    path = run.path("report_html")
    # report.md's lines end in "\n" only (text_of: a "\r", a line end to one reader and text to another, makes
    # it unreadable, and this check fails)
    markdown = text_of(run.path("report"))
    linked = [m.group(2) for m in PICTURE.finditer(markdown)]
    au.check(CHECK, all(p in FIGURES for p in linked), str(run.path("report")), "figure links (the "
             "run's figures)",
             list(FIGURES), linked)
    pngs = {p: bytes_of(run.rundir / p) for p in dict.fromkeys(linked) if p in FIGURES}
    expect = expected_page(markdown, text_of(run.path("per_query")), pngs)
    found = text_of(path)
    e_lines, f_lines = expect.split("\n"), found.split("\n")
    i = next((i for i, (a, b) in enumerate(zip(e_lines, f_lines)) if a != b), min(len(e_lines), len(f_lines)))
    au.check(CHECK, found == expect, str(path), f"the whole page (first difference at line {i + 1})",
             e_lines[i][:200] if i < len(e_lines) else "(end of file)",
             f_lines[i][:200] if i < len(f_lines) else "(end of file)")
