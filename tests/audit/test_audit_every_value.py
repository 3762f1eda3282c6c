"""Every value of every audited file is recomputed or declared (the audit's columns table,
scripts/audit/read/columns.py): for EACH documented column of each table and EACH documented key of each JSON
file, one value of a copy of the fixture's smoke run is changed to another well-formed value, the manifest
re-hashed to match, and the audit must reject it under the check the table names (a declared value: under
'columns', when it leaves its declared kind). The cases are generated from the table, so a column or key added
to it without a check that reads it fails here; one the pipeline writes but the table omits fails the
untouched run (test_untouched_results_pass)."""

from __future__ import annotations

import json

import pytest
from conftest import audit_module
from run_copies import read_rows, rehash_manifest, run_audit, write_rows

columns = audit_module("read.columns")
layout = audit_module("read.layout")

# the smoke run's parametric tables, named with the fixture's settings (3 comparisons, 5 queries, their
# groups)
PARAMETRIC = {"per_query": None, "grouped_indices": ("replicate", "draw0"),
              "query_indices": ("replicate", "draw0"), "replicates": None}


def _table_cases():
    cases = [(key, col, kind, check) for key, cols in columns.TABLES.items() for col, kind, check in cols]
    settings = {"metrics": {"ndcg_k": 10, "recall_ks": [10, 50], "mrr_k": 10},
                "comparisons": {"all": {"blend-ce": None, "blend-rrf": None, "ce-rrf": None}}}
    for key, only in PARAMETRIC.items():
        for col, kind, check in columns.table_columns(key, settings, 1, 1):
            if only is None or col in only:
                cases.append((key, col, kind, check))
    return cases


def _other_value(rows, col, kind, i):
    """Another well-formed value for row i's cell: the next integer, a float 0.25 away, the other truth value,
    another row's id (or the id with a digit added)."""
    v = rows[i][col]
    if kind == columns.INT:
        return str(int(v) + 1) if v else "1"
    if kind == columns.FLOAT:
        return repr(float(v) + 0.25)
    if kind == columns.BOOL:
        return "false" if v == "true" else "true"
    others = [r[col] for r in rows if r[col] != v]
    return others[0] if others and col != "model" else v + "0"


def _row_to_change(rundir, key, col):
    """The first row, except a logit of pairs.tsv: a pair the re-inference record holds (the verification
    check is what recomputes a logit; the reference and --reinfer checks anchor the rest)."""
    if (key, col) != ("pairs", "logit"):
        return 0
    sampled = {(p["qid"], p["doc_id"])
               for p in json.loads((rundir / "verification.json").read_text())["pairs"]}
    rows = read_rows(rundir / "pairs.tsv")
    return next(i for i, r in enumerate(rows) if (r["qid"], r["doc_id"]) in sampled)


@pytest.mark.slow
@pytest.mark.parametrize("key,col,kind,check", _table_cases(), ids=lambda x: str(x))
def test_every_table_column_is_checked(copy_of, key, col, kind, check):
    rundir = copy_of("smoke")
    path = rundir / layout.RUN_ARTEFACTS[key][0]
    rows = read_rows(path)
    i = _row_to_change(rundir, key, col)
    before = rows[i][col]
    rows[i][col] = _other_value(rows, col, kind, i)
    assert rows[i][col] != before
    write_rows(path, rows)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1, f"{key}.{col}: {before!r} -> {rows[i][col]!r} passed the audit"
    assert check in result["failed_checks"], (result["failed_checks"], proc.stdout[-1500:])


def _json_cases():
    return ([(key, name, check) for key, keys in columns.JSON_KEYS.items() for name, check in keys.items()]
            + [(key, f"settings.{name}", check) for key in ("scoring_measurements", "shard_measurements")
               for name, check in columns.SCORING_SETTINGS.items()])


def _changed(value, check):
    """A declared value leaves its kind (a measurement goes negative, a description or flag becomes a number);
    a recomputed one changes within its type (a list loses its last item, a record its first value
    changes)."""
    if check in (columns.PROVENANCE, columns.TIMINGS):
        return -1
    if check in (columns.PROSE, columns.FLAG, columns.MACHINE):
        return 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "0"
    if isinstance(value, list):
        return value[:-1] if value else ["0"]
    if isinstance(value, dict):  # its first value changed (a key added: the key set, check 'columns')
        first = sorted(value)[0]
        return {**value, first: _changed(value[first], check)}
    return "0"  # null


@pytest.mark.slow
@pytest.mark.parametrize("key,name,check", _json_cases(), ids=lambda x: str(x))
def test_every_json_key_is_checked(copy_of, key, name, check):
    rundir = copy_of("smoke")
    path = (rundir / "manifest.json" if key == "manifest" else
            sorted(rundir.glob("measurements/score-of-*/*.json"))[0] if key == "shard_measurements" else
            rundir / layout.RUN_ARTEFACTS[key][0])  # a shard's record: the first shard's
    record = json.loads(path.read_text())
    *outer, last = name.split(".")
    holder = record[outer[0]] if outer else record
    holder[last] = _changed(holder[last], check)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    if key != "manifest":
        rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    want = "columns" if check in columns.DECLARED else check
    assert proc.returncode == 1, f"{key}: {name} -> {holder[last]!r} passed the audit"
    assert want in result["failed_checks"], (result["failed_checks"], proc.stdout[-1500:])
