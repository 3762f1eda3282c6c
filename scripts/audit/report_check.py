"""The report check: the audit renders the report.md it expects - from ITS recomputation
(``expected_summary``: the method means, every comparison, groups, worst queries, repair counts, evaluation
statistics), the anchor's pins and settings, the run's hashes and the measurement records it cross-checks -
and compares report.md with it line by line. A plain string must be equal; a ``Row`` of declared provenance
must carry its label and a value; a ``Free`` line its fixed text around a part of the declared form. A line
that differs fails, naming its line number, the expected and the found text; a report line the audit cannot
explain fails, and so does an expected line that is missing. The STAND-IN banner is expected exactly when the
scorer is the stand-in."""

from __future__ import annotations

import difflib
import json
import math
import re

import report_prose as prose
from checks_statistics import LIBRARY_P_KEYS, P_ULPS
from expected_summary import expected_summary
from layout import RUN_FILE
from readers import text_of
from report_calibration import calibration_lines
from report_confirmation import confirmation_lines, opened_rows, opening_record, title
from report_lines import Free, Row
from report_provenance import is_standin, measurement_rows, pin_rows, run_file_section
from report_text import body_lines, evalstats_lines, figure_lines, head_lines

CHECK = "report"
# what a declared value may be written with: letters, digits and the punctuation of versions, paths and
# machine names; no markup (no <, >, &, *, [, ], #, !, backticks, |): a declared row cannot render as anything
# but its text
DECLARED_TEXT = r"[\w .+\-/:,()=@~]+"


def shown_summary(run, want) -> dict:
    """The audit's summary as summary.json holds it (canonical JSON: mappings in key order). A p-value
    computed by a library is shown as the run's summary.json has it when it is within the summary check's
    tolerance of the recomputed one (so the rounding to 3 digits is the run's); the exploratory tests in the
    run's order when the run lists the same tests (their order follows a mapping's order the anchor need not
    share)."""
    s = json.loads(json.dumps(expected_summary(run, want), sort_keys=True))
    ran = run.summary.get("evalstats", {})
    mine = s["evalstats"]
    for name, c in mine["mcnemar"]["comparisons"].items():
        _accept_p(c, ran.get("mcnemar", {}).get("comparisons", {}).get(name, {}))
    key = lambda e: (e.get("family"), e.get("slice"), e.get("comparison"))  # noqa: E731
    theirs = {key(e): e for e in ran.get("plan", {}).get("exploratory", []) if isinstance(e, dict)}
    for e in mine["plan"]["exploratory"]:
        _accept_p(e, theirs.get(key(e), {}))
    if set(theirs) == {key(e) for e in mine["plan"]["exploratory"]} and len(theirs) == \
            len(mine["plan"]["exploratory"]):
        order = {k: i for i, k in enumerate(theirs)}
        mine["plan"]["exploratory"].sort(key=lambda e: order[key(e)])
    return s


def _accept_p(mine: dict, theirs: dict) -> None:
    for k in LIBRARY_P_KEYS & set(mine):
        a, b = mine[k], theirs.get(k)
        if isinstance(a, float) and isinstance(b,
                                               float) and abs(a - b) <= P_ULPS * math.ulp(max(abs(a),
                                                                                              abs(b))):
            mine[k] = b


def expected_lines(run, want, au) -> list:
    """Every line report.md must have, in order (strings split at their newlines)."""
    s = shown_summary(run, want)
    standin = is_standin(run, want, au)
    started = opening_record(run, want, au) if run.kind == "confirmation" else None
    head = title(run, started) if started else f"# Development analysis — `{run.manifest.get('run')}`"
    out = head_lines(s, head, standin) + body_lines(s)
    if started:
        out += [""] + confirmation_lines(run, want, au, s, started)
    if run.reranker_kind == RUN_FILE:
        out += [""] + run_file_section(run, want)
    out += [""] + evalstats_lines(s) + [""] + calibration_lines(run, want, au) + figure_lines() + [""]
    out += prose.PINS_HEADING
    out += pin_rows(run, want, au, opened_rows(run, started) if started else [], standin)
    out += prose.MEASUREMENTS_HEADING + measurement_rows(run, want, au)
    flat = []
    for item in out:
        flat += item.split("\n") if isinstance(item, str) else [item]
    return flat


def shown(item) -> str:
    return item if isinstance(item, str) else item.text()


def part_of(item, line: str):
    """The declared part of ``line`` if it has the form ``item`` expects, else None."""
    if isinstance(item, Row):
        head = f"| {item.label} | "
        if not (line.startswith(head) and line.endswith(" |")):
            return None
        val = line[len(head):-2]
        if item.code:
            val = val[1:-1] if len(val) > 2 and val[0] == val[-1] == "`" else ""
        return val if re.fullmatch(DECLARED_TEXT, val) else None
    if not (line.startswith(item.prefix) and line.endswith(item.suffix)
            and len(line) >= len(item.prefix) + len(item.suffix)):
        return None
    part = line[len(item.prefix):len(line) - len(item.suffix)]
    return part if re.fullmatch(item.pattern, part) else None


def compare_line(au, f: str, number: int, item, line: str, groups: dict) -> None:
    """One expected line against report.md's line ``number``."""
    if isinstance(item, str) or (isinstance(item, Row) and item.value is not None):
        au.check(CHECK, line == shown(item), f, f"line {number}", shown(item), line)
        return
    part = part_of(item, line)
    problem = None if part is not None else f"not of the form {shown(item)!r}"
    if part is not None and isinstance(item, Free):
        problem = item.verify(part) if item.verify else None
        if item.group:
            groups.setdefault(item.group, set()).add(part)
            problem = problem or (f"{item.group}: {sorted(groups[item.group])} differ"
                                  if len(groups[item.group]) > 1 else None)
    au.check(CHECK, problem is None, f, f"line {number} (declared: {item.why or 'provenance'})",
             shown(item) + (f" [{problem}]" if problem else ""), line)


def compare_report(au, f: str, want_lines: list, text: str) -> None:
    """report.md against the expected lines: aligned on the lines the audit writes exactly (difflib), every
    other line compared where it stands; a missing line and an unexplained line each fail."""
    au.check(CHECK, text.endswith("\n"), f, "final newline", "report.md ends with a newline",
             repr(text[-20:]))
    found = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    matcher = difflib.SequenceMatcher(None, [shown(x) for x in want_lines], found, autojunk=False)
    groups: dict = {}
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = min(i2 - i1, j2 - j1)
        for k in range(pairs):
            compare_line(au, f, j1 + k + 1, want_lines[i1 + k], found[j1 + k], groups)
        for k in range(i1 + pairs, i2):
            au.check(CHECK, False, f, f"before line {j1 + pairs + 1}", shown(want_lines[k]), "missing")
        for k in range(j1 + pairs, j2):
            au.check(CHECK, False, f, f"line {k + 1}", "nothing (a line the audit cannot explain)", found[k])


def check(run, want, au) -> None:
    f = str(run.path("report"))
    au.note(CHECK, "report.md compared line by line with the report the audit renders from its own "
            "recomputation; declared provenance (library versions, python, the machine, local paths of an "
            "opening's record, earlier openings outside the lock folder's ledger) compared by form")
    compare_report(au, f, expected_lines(run, want, au), text_of(run.path("report")))
