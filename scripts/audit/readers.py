"""Readers of the run's file formats, written from the formats themselves (nothing shared with the
pipeline): tab-separated tables with a header, id lists, TREC runs, BEIR qrels, JSON, and sha256 of a
file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from problems import Unreadable


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_table(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Unreadable(path, "empty table (no header)")
    header = lines[0].rstrip("\r").split("\t")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.rstrip("\r").split("\t")
        if len(cells) != len(header):
            raise Unreadable(path, f"line {i}: {len(cells)} cells, header has {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def read_ids(path: Path) -> list[str]:
    return [l for l in path.read_text(encoding="utf-8").split("\n") if l]


def read_run(path: Path) -> dict[str, list[tuple[str, int, str]]]:
    """A TREC run written by the pipeline: per query, (doc id, rank, score text) in file order."""
    out: dict[str, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _q0, d, r, s, _tag = line.split()
        out.setdefault(q, []).append((d, int(r), s))
    return out


def read_run_lines(path: Path) -> list[tuple[int, str, str, str]]:
    """Every line of a user's TREC run (``qid Q0 docid rank score tag``) as (line number, qid, doc id, score
    text), in file order, nothing merged: a line without six fields or an unterminated last line is
    unreadable."""
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        raise Unreadable(path, "the last line is not terminated (truncated file?)")
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if len(fields) != 6:
            raise Unreadable(path,
                             f"line {i}: {len(fields)} fields, 6 expected (qid Q0 docid rank score tag)")
        out.append((i, fields[0], fields[2], fields[4]))
    return out


def read_run_scores(path: Path) -> dict[str, dict[str, str]]:
    """A user's TREC run (``qid Q0 docid rank score tag``): per query, each document's score as its text."""
    lines: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _q0, d, _r, score, _tag = line.split()
        lines.setdefault(q, {})[d] = score
    return lines


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels table (header query-id, corpus-id, score; LF or CRLF)."""
    out: dict[str, dict[str, int]] = {}
    for row in read_table(path):
        out.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return out


def _no_repeated_keys(pairs):
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:  # json keeps the last, a reader of the file may see the first
        raise ValueError(f"repeated keys {repeated}")
    return dict(pairs)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: Path):
    """A JSON file as strict JSON: a repeated key in any object, NaN or Infinity is refused (naming the
    file)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_repeated_keys,
                          parse_constant=_no_constant)
    except ValueError as exc:  # json.JSONDecodeError is one
        raise Unreadable(path, f"not strict JSON: {exc}") from None


def resolve(path_text: str, base: Path) -> Path:
    p = Path(path_text)
    return p if p.is_absolute() else base / p


def docs_by_query(rows) -> dict[str, list[str]]:
    """Each query's document ids in file order (a candidate table's rows)."""
    out: dict[str, list[str]] = {}
    for row in rows:
        out.setdefault(row["qid"], []).append(row["doc_id"])
    return out


def rows_by_query(rows) -> dict[str, list[dict]]:
    """Each query's rows in file order."""
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["qid"], []).append(row)
    return out
