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
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .errors import MalformedInputError, MissingInputError, NotRegularFileError

CHUNK = 1 << 20
_UMASK = os.umask(0o022)
os.umask(_UMASK)


# ------------------------------------------------------------------ reading inputs: once, regular files --
# An input's bytes are read through one descriptor of a regular file. A FIFO, socket, device or folder could
# give one reader the pinned bytes and the next other bytes, so it is refused, whatever it is named. A file
# whose hash is checked is parsed from the same bytes (VerifiedFile), never read a second time.
class VerifiedFile(os.PathLike):
    """A file's path with the bytes whose hash was checked: every reader of this module (and of beir, trec,
    splits, candidates) given one parses these bytes and never opens the file again."""

    def __init__(self, path, data: bytes):
        self.path, self.data = Path(path), data

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)


@contextlib.contextmanager
def open_regular(path) -> Iterator:
    """A binary file object of ``path``, opened once and refused unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO without a writer must not block
    except FileNotFoundError:
        raise MissingInputError(f"MISSING FILE: {path} does not exist") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFileError(path, file_kind(mode))
    with os.fdopen(fd, "rb") as fh:
        yield fh


def file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
             (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))
    return next((name for test, name in kinds if test(mode)), "special file")


def input_bytes(source) -> bytes:
    """The bytes of an input: a VerifiedFile's own, else the regular file's, read once."""
    if isinstance(source, VerifiedFile):
        return source.data
    with open_regular(source) as fh:
        return fh.read()


def read_once(path) -> VerifiedFile:
    """A file read once (a regular file): every check, parse and copy of the result uses these bytes."""
    return VerifiedFile(path, input_bytes(path))


def input_text(source) -> str:
    """An input's UTF-8 text (a byte that is not UTF-8 is an error naming the line)."""
    data = input_bytes(source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInputError(source, data[:exc.start].count(b"\n") + 1,
                                  f"byte {exc.start} is not UTF-8 ({exc.reason})") from None


def input_lines(source) -> io.StringIO:
    """An input's text as lines with their line ends kept (as ``open(..., newline="")`` gives them)."""
    return io.StringIO(input_text(source), newline="")


def _hash_file(path, algo: str) -> str:
    h = hashlib.new(algo)
    if isinstance(path, VerifiedFile):
        h.update(path.data)
        return h.hexdigest()
    with open_regular(path) as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
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


def json_equal(a, b) -> bool:
    """Equal as canonical JSON texts: type-strict (``17.0`` is not ``17``, ``true`` is not ``1``), unlike
    Python's ==."""
    return canonical_json(a) == canonical_json(b)


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise _RepeatedKey(repeated)
    return dict(pairs)


def read_json(path):
    """A JSON file, strictly: a key repeated in one object (json would keep the last) is malformed."""
    try:
        return json.loads(input_text(path), object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise MalformedInputError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
    except _RepeatedKey as exc:
        raise MalformedInputError(path, "?", f"a key repeated in one object {exc.args[0]} (JSON readers "
                                  "disagree on which one counts): write each key once") from None


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
    rows: list[dict[str, str]] = []
    with input_lines(path) as fh:
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


def write_index_matrix(path, idx, prefix: str = "draw") -> None:
    """A bootstrap index matrix as TSV: a ``replicate`` column, then one column per draw (``<prefix><j>``)."""
    with atomic_open(path, "w") as fh:
        fh.write("replicate\t" + "\t".join(f"{prefix}{j}" for j in range(idx.shape[1])) + "\n")
        for b, row in enumerate(idx.tolist()):
            fh.write(f"{b}\t" + "\t".join(map(str, row)) + "\n")
