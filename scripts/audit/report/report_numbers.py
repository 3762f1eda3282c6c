"""How check 'report' (checks.report_and_seal) reads report.md: every NUMBER, VERDICT and LABEL it shows
equals the audit's own recomputation. The words around them are the pipeline's and are not compared: a
sentence may be reworded freely, a number may not change.

report.md is read as tables and lines (``parse``). A table is found by its first header cell (without a
parenthesised part) and its place among the tables of that name; each row is compared cell by cell with the
row the audit expects (``report_facts``), a number by value at the precision shown
(``compare.same_number``). A line is found by a few words and must show the expected numbers in order and
the expected verdict words. A missing table, row or line, a missing number or a different one fails, naming
the line. The STAND-IN banner (a quoted line naming STAND-IN before the first section) is expected exactly
when the scorer is the stand-in. report.html is a rendering of report.md: its manifest hash is checked as
every artefact's, and the data its query browser embeds are checked by check 'report_browser'
(checks.browser)."""

from __future__ import annotations

import json
import re

from core.compare import numbers, same_number, same_value

CHECK = "report"
ANY = object()  # a cell the audit does not compare (declared provenance, a description)


class Loose(float):
    """A number a line may show without a decimal point (a p-value shown to 4 significant digits: 1)."""


def same_cell(cell: str, want) -> bool:
    """One table cell: ANY; a predicate; None as NA; a number or a tuple of numbers by value; a text as it
    is."""
    cell = cell.strip().strip("`")
    if want is ANY:
        return True
    if callable(want):
        return want(cell)
    if want is None:
        return cell.startswith("NA")
    if isinstance(want, tuple):
        found = numbers(cell)
        return len(found) == len(want) and all(same_number(a, b) for a, b in zip(found, want))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return same_cell(cell, (want,))
    return cell == str(want)


def parse(text: str) -> tuple[dict, list]:
    """report.md's tables {(first header cell, its place): [(line number, cells), ...]} (header and rule
    excluded) and its other lines [(line number, text)]."""
    tables: dict = {}
    lines, current, seen = [], None, {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("|"):
            current = None
            lines.append((number, line))
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            name = re.sub(r"\s*\(.*\)$", "", cells[0])
            key = (name, seen.setdefault(name, 0))
            seen[name] += 1
            current = tables.setdefault(key, [])
        elif not set("".join(cells)) <= set("-: "):
            current.append((number, cells))
    return tables, lines


def compare_table(au, f: str, key, found: list | None, rows: list) -> None:
    """Each expected row (its cells, the label first) against the table's row at the same place."""
    if not au.check(CHECK, found is not None, f, f"table {key[0]!r} (number {key[1] + 1})", "present",
                    "missing"):
        return
    where = f"line {found[0][0]}" if found else "no rows"
    au.check(CHECK, len(found) == len(rows), f, f"rows of table {key[0]!r} ({where})", len(rows), len(found))
    for (number, cells), want in zip(found, rows):
        bad = [i for i, w in enumerate(want) if i >= len(cells) or not same_cell(cells[i], w)]
        au.check(CHECK, not bad, f, f"line {number}", shown_row(want), " | ".join(cells))


def shown_row(want: list) -> str:
    return " | ".join("…" if w is ANY else "NA" if w is None else str(w) for w in want)


def compare_line(au, f: str, lines: list, fact: tuple) -> None:
    """The first line holding ``marker``: the values in order among its numbers (``in_line``), each word of
    ``words`` present (yes / no: exactly these, in this order) and each of ``not_words`` absent."""
    marker, values, words, not_words = fact
    hit = next(((n, t) for n, t in lines if marker in t), None)
    if not au.check(CHECK, hit is not None, f, f"a line with {marker!r}", values, "missing"):
        return
    number, text = hit
    found, i = numbers(text), 0
    for v in values:
        while i < len(found) and not in_line(found[i], v):
            i += 1
        i += 1
    flags = [w for w in words if w in ("yes", "no")]  # in order, as the line shows them
    ok = (i <= len(found) and all(w in text for w in words if w not in flags)
          and not any(w in text for w in not_words)
          and (not flags or re.findall(r"\b(yes|no)\b", text) == flags))
    au.check(CHECK, ok, f, f"line {number}", f"{values} {words}".strip(), text)


def in_line(shown: str, value) -> bool:
    """A number of a line: a float only where a decimal point or exponent shows it (a whole number in the
    line's text, ``success@10``, is not it) unless it is ``Loose``."""
    decimal = isinstance(value, int) or isinstance(value, Loose) or any(c in shown for c in ".eE")
    return decimal and same_number(shown, value)


def check_banner(au, f: str, lines: list, standin: bool) -> None:
    head = []
    for _, t in lines:
        if t.startswith("## "):
            break
        head.append(t)
    shown = any(t.startswith(">") and "STAND-IN" in t for t in head)
    au.check(CHECK, shown == standin, f, "the STAND-IN banner (before the first section)",
             "present" if standin else "absent (the scorer is not the stand-in)",
             "present" if shown else "absent")


def compare_record(au, f: str, lines: list, record: dict) -> None:
    """A JSON record report.md shows on one line (an opening's ledger entry): equal as a value."""
    shown = []
    for n, t in lines:
        if t.startswith("{"):
            try:
                shown.append((n, json.loads(t)))
            except ValueError:
                continue
    ok = any(same_value(obj, record) for _, obj in shown)
    au.check(CHECK, ok, f, f"line {shown[0][0]}" if shown else "a line with a JSON record", record,
             shown[0][1] if shown else "missing")


def compare_labelled(au, f: str, key, found: list | None, labelled: dict) -> None:
    """A two-column table (item | value): each expected label's row shows the expected value."""
    rows = {cells[0]: (n, cells) for n, cells in found or []}
    for label, value in labelled.items():
        n, cells = rows.get(label, (None, None))
        au.check(CHECK, cells is not None and len(cells) > 1 and same_cell(cells[1], value), f,
                 f"line {n}" if n else f"the row {label!r} of table {key[0]!r}",
                 value.__doc__ if callable(value) else value,
                 " | ".join(cells) if cells else "missing")
