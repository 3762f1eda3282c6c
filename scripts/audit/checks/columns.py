"""Check 'columns': every table of the run has exactly the documented columns in the documented order, every
cell is readable as its kind (a number, a count, a flag), and every JSON file has exactly the documented keys
(columns.py). Which check recomputes each value is declared there; this check makes sure nothing else is in
the files to be believed. Signature: see checks.provenance."""

from __future__ import annotations

import math

from read.columns import (
    EMPTY_ALLOWED,
    EMPTY_ALLOWED_SUFFIX,
    FLAG,
    MACHINE,
    PARAMETRIC_TABLES,
    PROSE,
    PROVENANCE,
    TIMING_KEYS,
    TIMINGS,
    canonical,
    json_keys_of,
    scoring_settings_of,
    table_columns,
    tables_of,
)
from read.readers import read_json, read_table, text_of


def _header(path) -> list[str]:
    return text_of(path).split("\n", 1)[0].split("\t")


def _check_table(run, want, au, key: str) -> None:
    path = run.path(key)
    cols = table_columns(key, want.settings, len(want.groups), len(run.analysed))
    names = [c for c, _, _ in cols]
    found = _header(path)
    au.check("columns", found == names, str(path), "header (the documented columns, in order)", names, found)
    if found != names:
        return
    for i, row in enumerate(read_table(path), start=2):
        for col, kind, _check in cols:
            empty = (key, col) in EMPTY_ALLOWED or (key == "per_query" and col.endswith(EMPTY_ALLOWED_SUFFIX))
            if not canonical(kind, row[col], empty):
                au.check("columns", False, str(path), f"line {i} {col}", f"a {kind}",
                         row[col])
    au.check("columns", True, str(path), "cells", "readable", "readable")


def description(value) -> bool:
    """A record describing the machine: texts, numbers and flags, in records, all the way down."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and description(v) for k, v in value.items())
    finite = not (isinstance(value, float) and not math.isfinite(value))
    return isinstance(value, (str, int, float, bool)) and finite


def measurement(value) -> bool:
    """A timing/memory/count figure: one finite number >= 0 (not null, a flag, a list or a record)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value >= 0)


def timings(value) -> bool:
    """A record of measurements with exactly the documented keys."""
    return (isinstance(value, dict) and sorted(value) == sorted(TIMING_KEYS)
            and all(measurement(v) for v in value.values()))


DECLARED_KIND = {PROVENANCE: (measurement, "one finite number >= 0 (a measurement)"),
                 TIMINGS: (timings, f"a record of measurements {{{', '.join(TIMING_KEYS)}}}"),
                 PROSE: (lambda v: isinstance(v, str), "a description (text)"),
                 FLAG: (lambda v: isinstance(v, bool), "true or false"),
                 MACHINE: (lambda v: isinstance(v, dict) and description(v), "a record of texts and numbers")}


def _check_json(au, path, found, keys: dict, where: str = "") -> None:
    got = sorted(found) if isinstance(found, dict) else type(found).__name__
    au.check("columns", got == sorted(keys), str(path), f"{where}keys (the documented ones)", sorted(keys),
             got)
    if not isinstance(found, dict):
        return
    for name, check in keys.items():
        if check in DECLARED_KIND and name in found:
            ok, what = DECLARED_KIND[check]
            au.check("columns", ok(found[name]), str(path), f"{where}{name} ({check})", what, found[name])


def shard_records(run) -> list:
    """The per-shard measurement records the run folder holds (measurements/score-of-<N>/<i>.json)."""
    return sorted(run.rundir.glob("measurements/score-of-*/*.json"))


def check_columns(run, want, au) -> None:
    """Every table and JSON record the anchor's settings give the run (its candidate source, its reranker's
    kind)."""
    for key in (*tables_of(want.settings), *PARAMETRIC_TABLES):
        _check_table(run, want, au, key)
    for key, keys in json_keys_of(want.settings).items():
        for path in shard_records(run) if key == "shard_measurements" else [
                run.manifest_path if key == "manifest" else run.path(key)]:
            found = read_json(path)
            _check_json(au, path, found, keys)
            if key in ("scoring_measurements", "shard_measurements") and isinstance(found, dict):
                _check_json(au, path, found.get("settings"), scoring_settings_of(want.settings), "settings.")
