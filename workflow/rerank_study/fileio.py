"""Hashes, atomic writes, canonical JSON and exact float text.

Rules kept everywhere in the project:
* every output is written to a temporary file in the same folder and renamed into place only
  when complete, so an interrupted run never leaves a half-written artefact that looks done;
* floats are written with ``repr`` (shortest text that round-trips exactly), so a reader -
  including the standard-library audit - recovers the identical IEEE-754 value;
* JSON is canonical (sorted keys, two-space indent, ASCII, trailing newline) so equal content
  means equal bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .errors import MalformedInputError, MissingInputError

CHUNK = 1 << 20
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _hash_file(path, algo: str) -> str:
    h = hashlib.new(algo)
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                h.update(block)
    except FileNotFoundError:
        raise MissingInputError(f"MISSING FILE: {path} does not exist") from None
    return h.hexdigest()


def sha256_file(path) -> str:
    return _hash_file(path, "sha256")


def md5_file(path) -> str:
    return _hash_file(path, "md5")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


@contextlib.contextmanager
def atomic_path(path) -> Iterator[Path]:
    """Yield a temporary sibling path of ``path``; rename it to ``path`` only if the block succeeds.

    Use it when a file must be checked (e.g. its hash verified) after it is written and before
    it becomes visible under its final name. On failure the temporary file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the mode a plain open() would
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path, mode: str = "w", encoding: str | None = "utf-8",
                newline: str | None = "\n") -> Iterator:
    """Open a temporary sibling of ``path`` for writing; on success it is fsynced and renamed to
    ``path``. On any exception the temporary file is removed and ``path`` is left untouched."""
    kwargs = {} if "b" in mode else {"encoding": encoding, "newline": newline}
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as fh:
            yield fh


def atomic_write_text(path, text: str) -> None:
    with atomic_open(path, "w") as fh:
        fh.write(text)


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def write_json(path, obj) -> None:
    atomic_write_text(path, canonical_json(obj))


def read_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise MissingInputError(f"MISSING FILE: {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise MalformedInputError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None


def fmt_float(x: float) -> str:
    """Exact, shortest round-trip text of a float (``repr``); refuses NaN/inf."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"refusing to write non-finite float {x!r}")
    return repr(x)


def fmt_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return fmt_float(value)
    text = str(value)
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(f"refusing to write a TSV cell containing a tab or newline: {text!r}")
    return text


def write_tsv(path, header: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Write a tab-separated table atomically (LF line ends). Returns the number of data rows."""
    n = 0
    with atomic_open(path, "w") as fh:
        fh.write("\t".join(header) + "\n")
        for row in rows:
            if len(row) != len(header):
                raise ValueError(f"{path}: row {n + 1} has {len(row)} cells, header has {len(header)}")
            fh.write("\t".join(fmt_cell(v) for v in row) + "\n")
            n += 1
    return n


def read_tsv(path, expected_header: Sequence[str] | None = None) -> list[dict[str, str]]:
    """Read a tab-separated table with a header line; every row must have the header's width."""
    path = Path(path)
    if not path.exists():
        raise MissingInputError(f"MISSING FILE: {path} does not exist")
    rows: list[dict[str, str]] = []
    with open(path, encoding="utf-8", newline="") as fh:
        header_line = fh.readline()
        if not header_line.endswith("\n"):
            raise MalformedInputError(path, 1, "missing or unterminated header line")
        header = header_line.rstrip("\r\n").split("\t")
        if expected_header is not None and list(header) != list(expected_header):
            raise MalformedInputError(path, 1, f"header {header} != expected {list(expected_header)}")
        for line_no, line in enumerate(fh, start=2):
            if not line.endswith("\n"):
                raise MalformedInputError(path, line_no, "last line is not terminated (truncated file?)")
            cells = line.rstrip("\r\n").split("\t")
            if len(cells) != len(header):
                raise MalformedInputError(path, line_no, f"{len(cells)} cells, header has {len(header)}")
            rows.append(dict(zip(header, cells)))
    return rows
