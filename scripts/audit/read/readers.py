"""Readers of the run's file formats, written from the formats themselves (nothing shared with the
pipeline): tab-separated tables with a header, id lists, TREC runs, BEIR qrels, JSON, and sha256 of a
file.

One read per file: within one audit (``one_read_per_file``) every file is read once, from a regular file
(a FIFO, socket, device or folder is unreadable), and its sha256 and every parse of it use those bytes. A
file that changes while the audit runs cannot show one check the pinned bytes and another check others."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import stat
from pathlib import Path

from core.problems import Unreadable

_READ: dict[str, bytes] | None = None  # the bytes of every file read in the current audit, by absolute path


@contextlib.contextmanager
def one_read_per_file():
    """The scope of one audit: a file read twice inside it gives the bytes of its first read."""
    global _READ
    outer, _READ = _READ, {}
    try:
        yield
    finally:
        _READ = outer


def bytes_of(path: Path) -> bytes:
    """A regular file's bytes (the audit's first read of it, inside ``one_read_per_file``)."""
    key = os.path.abspath(path)
    if _READ is not None and key in _READ:
        return _READ[key]
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO with no writer must not block the audit
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreadable(path, "not a regular file (a FIFO, socket, device or folder): two reads of it could "
                         "differ, so it is not read")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read()
    if _READ is not None:
        _READ[key] = data
    return data


def text_of(path: Path) -> str:
    """A file's UTF-8 text (``bytes_of``), CRLF and CR read as LF. A byte that is not UTF-8: unreadable."""
    data = bytes_of(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(path, f"byte {exc.start} is not UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(bytes_of(path)).hexdigest()


def read_table(path: Path) -> list[dict]:
    """A tab-separated table with a header: one dict per row."""
    lines = text_of(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Unreadable(path, "empty table (no header)")
    header = lines[0].split("\t")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise Unreadable(path, f"line {i}: {len(cells)} cells, header has {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def read_ids(path: Path) -> list[str]:
    """One id per line (a last line without LF too); an empty line is unreadable (the pipeline writes
    none)."""
    ids = text_of(path).splitlines()
    if "" in ids:
        raise Unreadable(path, f"line {ids.index('') + 1} is empty")
    return ids


def read_run(path: Path) -> dict[str, list[tuple[str, int, str]]]:
    """A TREC run written by the pipeline: per query, (doc id, rank, score text) in file order."""
    out: dict[str, list] = {}
    for line in text_of(path).splitlines():
        q, _q0, d, r, s, _tag = line.split()
        out.setdefault(q, []).append((d, int(r), s))
    return out


def read_run_lines(path: Path) -> list[tuple[int, str, str, str]]:
    """Every line of a user's TREC run (``qid Q0 docid rank score tag``) as (line number, qid, doc id, score
    text), in file order, nothing merged: a line without six fields is unreadable."""
    text = text_of(path)
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
    for line in text_of(path).splitlines():
        q, _q0, d, _r, score, _tag = line.split()
        lines.setdefault(q, {})[d] = score
    return lines


_PLAIN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def plain_number(text: str) -> float:
    """A run's score text as a number when it is a plain ASCII decimal (what C's atof, trec_eval's reader,
    reads as the same value), else NaN: float() alone also takes "1_000", full-width digits and "inf"."""
    return float(text) if _PLAIN.fullmatch(text) else math.nan


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels table (header query-id, corpus-id, score; BEIR's own end lines in CRLF)."""
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
        return json.loads(text_of(path), object_pairs_hook=_no_repeated_keys,
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
