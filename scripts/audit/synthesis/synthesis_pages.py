"""Check ``synthesis_pages``: the renderings of a synthesis, as the study's audit treats report.html (a
rendering whose hash is listed; its numbers are audited where they are computed, synthesis.json).

Every rendering the rule writes is present, and its sha256 is listed in audit.json's ``info.renderings``
(what the cross-study report takes synthesis.md by). synthesis.html is checked as a page of synthesis.md:
self-contained (every ``src``/``href`` is a data URI or a fragment; no ``http://`` or ``https://`` anywhere),
forest.png's exact bytes inlined as a PNG data URI, and the numbers of its body are synthesis.md's, in order
(tags read as a space, entities decoded). synthesis.md's pooled answer (its line "Pooled primary Δ ...":
the estimate, the interval, B, the seed and the plain mean of means, in order) shows synthesis.json's values
at the precision shown (synthesis.json's own numbers are recomputed by synthesis_checks); its other lines are
a rendering and are not compared, nor are the words and the markup. FAIL CLOSED: a missing file or line fails,
naming it and the fix."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from core.compare import first_difference, numbers, same_number
from read.readers import bytes_of, sha256_of, text_of

CHECK = "synthesis_pages"
RENDERINGS = ("synthesis.tsv", "synthesis.tex", "forest.png", "synthesis.md", "synthesis.html")
FIX = "rule synthesis writes it: rerun `snakemake synthesis` with the invocation's --config and --configfile"
TAG = re.compile(r"<[^>]*>")
LINKED = re.compile(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", re.IGNORECASE)
OUTSIDE = re.compile(r"https?://", re.IGNORECASE)
POOLED_LINE = "Pooled primary Δ"  # how synthesis.md's line of the pooled answer begins


def body_numbers(page: str) -> list[str]:
    """The numbers a reader sees in the page's body: tags read as a space, entities decoded."""
    start = page.find("<body")
    return numbers(html.unescape(TAG.sub(" ", page[start:] if start >= 0 else page)))


def page_problems(page: str, markdown: str, forest: bytes) -> list[tuple[str, str, object]]:
    """(item, expected, found) for each way ``page`` is not a self-contained page of ``markdown`` with
    ``forest`` inlined; none when it is."""
    out = []
    links = [v for v in LINKED.findall(page) if not v.startswith(("data:", "#"))]
    if links:
        out.append(("self-contained (src and href)", "data URIs and fragments only", links[:5]))
    found = OUTSIDE.findall(page)
    if found:
        out.append(("self-contained (no address outside the page)", "no http:// or https://", len(found)))
    uri = "data:image/png;base64," + base64.b64encode(forest).decode("ascii")
    if f'src="{uri}"' not in page:
        out.append(("forest.png inlined", "its bytes as a PNG data URI", "absent or other bytes"))
    want, got = numbers(markdown), body_numbers(page)
    if want != got:
        first = first_difference(want, got)
        out.append((f"the numbers of synthesis.md (the first to differ: number {first + 1})",
                    want[first:first + 3], got[first:first + 3]))
    return out


def pooled_problems(markdown: str, got: dict) -> list[tuple[str, object, object]]:
    """(item, expected, found) when synthesis.md's pooled line does not show synthesis.json's pooled answer
    (``got``) at the precision shown; none when it does."""
    lines = [x for x in markdown.split("\n") if x.startswith(POOLED_LINE)]
    if len(lines) != 1:
        return [(f"the line {POOLED_LINE!r} (the pooled answer)", "one line", len(lines))]
    p = got.get("pooled") if isinstance(got.get("pooled"), dict) else {}
    interval = p.get("interval") if isinstance(p.get("interval"), list) else [None, None]
    want = [p.get("estimate"), *interval[:2], p.get("B"), p.get("seed"), got.get("plain_mean_of_means")]
    shown = numbers(lines[0])
    if len(shown) != len(want) or not all(same_number(a, b) for a, b in zip(shown, want)):
        return [(f"the line {POOLED_LINE!r}: estimate, interval, B, seed, plain mean of means", want, shown)]
    return []


def check_pages(au, folder: Path, got: dict) -> dict:
    """Every rendering present, synthesis.html a page of synthesis.md, synthesis.md's pooled answer
    synthesis.json's (``got``); returns {file name: sha256} of those present (audit.json's
    ``info.renderings``)."""
    present = {}
    for name in RENDERINGS:
        path = folder / name
        if au.check(CHECK, path.is_file(), str(path), "present", f"the file ({FIX})", "missing"):
            present[name] = sha256_of(path)
    if {"synthesis.md", "synthesis.html", "forest.png"} <= set(present):
        page = folder / "synthesis.html"
        problems = page_problems(text_of(page), text_of(folder / "synthesis.md"),
                                 bytes_of(folder / "forest.png"))
        if not problems:
            au.check(CHECK, True, str(page), "a self-contained page of synthesis.md with forest.png")
        for item, want, found in problems:
            au.check(CHECK, False, str(page), item, want, found)
    if "synthesis.md" in present:
        md = folder / "synthesis.md"
        problems = pooled_problems(text_of(md), got)
        if not problems:
            au.check(CHECK, True, str(md), f"the line {POOLED_LINE!r} (synthesis.json's pooled answer)")
        for item, want, found in problems:
            au.check(CHECK, False, str(md), item, want, found)
    return present
