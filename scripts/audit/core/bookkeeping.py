"""The record of check results: every comparison is counted under its check's name and every failure
kept with its file, item, expected and found value. ``Audit.run`` runs one check FAIL CLOSED: a check
whose input is missing or unreadable - or that stops on anything else - fails (naming why); it never skips
and never ends the audit."""

from __future__ import annotations

import math

MAX_FAILURES_SHOWN = 20


class Audit:
    def __init__(self):
        self.checks: dict[str, dict] = {}

    def check(self, name: str, ok: bool, file: str, item: str = "", expected=None, found=None) -> bool:
        c = self.checks.setdefault(name, {"checked": 0, "failures": []})
        c["checked"] += 1
        if not ok:
            c["failures"].append({"file": file, "item": item, "expected": jsonable(expected),
                                  "found": jsonable(found)})
        return ok

    def note(self, name: str, text: str) -> None:
        self.checks.setdefault(name, {"checked": 0, "failures": []})["note"] = text

    def run(self, name: str, fn, run, want) -> None:
        """Run one named check ``fn(run, want, audit)``; if its inputs are missing or unreadable, the check
        FAILS saying so."""
        try:
            fn(run, want, self)
        except Exception as exc:  # noqa: BLE001 - whatever stops a check is that check's failure, recorded
            self.check(name, False, getattr(exc, "file", "") or str(run.rundir), "the check could not run",
                       "its inputs present and well formed", f"{type(exc).__name__}: {exc}")

    @property
    def failed(self):
        return [n for n, c in self.checks.items() if c["failures"]]

    def result(self, info: dict) -> dict:
        """audit.json: the verdict, the run's facts and every check's counts with its first failures."""
        failed = self.failed
        return {"ok": not failed, "failed_checks": failed, "info": info,
                "float_comparison": "exact (same documented summation order on both sides)",
                "checks": {n: {"checked": c["checked"], "failures": len(c["failures"]),
                               "first_failures": c["failures"][:MAX_FAILURES_SHOWN],
                               **({"note": c["note"]} if "note" in c else {})}
                           for n, c in self.checks.items()}}


def jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, (set, tuple)):
        return sorted(x) if isinstance(x, set) else list(x)
    return x
