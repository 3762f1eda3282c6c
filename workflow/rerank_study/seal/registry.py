"""The registry of sealed sets: every lock folder of the repository, read as one, and the development side.

A **sealed set** is identified by its content, not by a path: the order-independent hash of its
(query, document, judgement) rows (``content_sha256``, ``beir.qrels_content_sha256``) plus the corpus it
judges (the corpus file's sha256). Each lock folder records its set in ``derived_pins.json`` under
``sealed_set`` (written by ``repin=data`` and ``repin=splits``): the file, its hashes, the dataset, and per
sealed query the sha256 of its normalised text (public information: the query texts are in queries.jsonl).

The **development side** of an invocation is every development input it reads: the development qrels file
(its hashes and judged query ids), the development split, the candidate rows labelled ``dev``, and a user's
run. It holds a sealed set's data - and the invocation stops, naming both folders - when

* a development file's content equals a sealed set's (any corpus);
* it names a sealed query id of a set on the same corpus (corpus sha256 or dataset name equal);
* a query it evaluates (the split and its candidates) has the normalised text of a sealed query of any set.

Two sealed sets **overlap** under the same three rules; openings of overlapping sets are counted together.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import PinMismatchError, SealError
from ..core.fileio import (
    VerifiedFile,
    input_lines,
    input_text,
    read_json,
    read_once,
    sha256_file,
    sha256_text,
)
from ..data.pins import verify_against, verify_frozen_candidates
from . import locations as loc

TEXT_RULE = "sha256 of the query text case-folded, whitespace collapsed to single spaces"


def normalised_text(text: str) -> str:
    """A query's text with case and whitespace normalised (a copy that differs only there is the same
    query)."""
    return " ".join(text.casefold().split())


def text_sha256(text: str) -> str:
    return sha256_text(normalised_text(text))


def sealed_record(data_pins: Mapping, queries: Mapping[str, str], sealed_ids: Iterable[str]) -> dict:
    """The ``sealed_set`` entry of a lock folder's derived pins (every sealed id must have a query text)."""
    files = data_pins["files"]
    name = next(n for n, p in files.items() if p.get("role") == "qrels_confirm" and p.get("sealed"))
    ids = sorted(set(sealed_ids))
    missing = [q for q in ids if q not in queries]
    if missing:
        raise SealError(f"sealed queries without a text in queries.jsonl: {missing[:10]}; the data is "
                        "inconsistent")
    return {"file": name, "file_sha256": files[name]["sha256"],
            "content_sha256": files[name]["content_sha256"], "corpus_sha256": files["corpus.jsonl"]["sha256"],
            "dataset": data_pins.get("dataset", "scifact"), "text_rule": TEXT_RULE,
            "queries": {q: text_sha256(queries[q]) for q in ids}}


@dataclass(frozen=True)
class SealedSet:
    lockdir: Path
    dataset: str
    corpus_sha256: str
    file: str
    file_sha256: str
    content_sha256: str
    query_ids: frozenset
    text_sha256: frozenset

    @property
    def key(self) -> str:
        """The set's identity: its judgements' content hash and its corpus."""
        return sha256_text(f"{self.content_sha256}\n{self.corpus_sha256}")

    def same_corpus(self, dataset: str, corpus_sha256: str | None) -> bool:
        """The same dataset name or the same corpus file."""
        return self.dataset == dataset or (corpus_sha256 is not None and self.corpus_sha256 == corpus_sha256)

    def overlaps(self, other: SealedSet) -> bool:
        return (self.content_sha256 == other.content_sha256 or self.file_sha256 == other.file_sha256
                or bool(self.text_sha256 & other.text_sha256)
                or (self.same_corpus(other.dataset, other.corpus_sha256)
                    and bool(self.query_ids & other.query_ids)))

    def identity(self) -> dict:
        """What a started ledger line records of the set, so that any later set can be matched with it."""
        return {"sealed_set": self.key, "sealed_sha256": self.file_sha256,
                "sealed_content_sha256": self.content_sha256, "corpus_sha256": self.corpus_sha256,
                "dataset": self.dataset, "sealed_query_ids": sorted(self.query_ids),
                "sealed_text_sha256": sorted(self.text_sha256)}

    def recorded_in(self, entry: Mapping) -> bool:
        """Whether a ledger line names this set, or one overlapping it (by key, file, content, texts, or
        sealed query ids on the same corpus)."""
        if entry.get("sealed_set") == self.key or entry.get("sealed_sha256") == self.file_sha256 \
                or entry.get("sealed_content_sha256") == self.content_sha256:
            return True
        if self.text_sha256 & set(entry.get("sealed_text_sha256") or ()):
            return True
        ids = set(entry.get("sealed_query_ids") or ())
        return bool(ids & self.query_ids) and self.same_corpus(entry.get("dataset"),
                                                              entry.get("corpus_sha256"))


def _fix(lockdir) -> str:
    return ("record it with: snakemake --cores 1 --config repin=splits (for a study: studies=[<its name>]), "
            f"which re-derives the splits and the sealed set of {lockdir} from its pinned data, then commit "
            "the lock folder")


def _check_record(lockdir: Path, rec: dict, pins: dict, name: str) -> None:
    pin, where = pins["files"][name], lockdir / loc.DERIVED_PINS
    expected = {"file": name, "file_sha256": pin["sha256"], "content_sha256": pin.get("content_sha256"),
                "corpus_sha256": pins["files"]["corpus.jsonl"]["sha256"],
                "dataset": pins.get("dataset", "scifact")}
    differ = [k for k, v in expected.items() if rec.get(k) != v]
    if differ:
        raise SealError(f"{where}: its sealed_set record differs from {lockdir / loc.DATA_PINS} in "
                        f"{', '.join(differ)} (recorded {[rec.get(k) for k in differ]}, pinned "
                        f"{[expected[k] for k in differ]}): {_fix(lockdir)}")
    split = lockdir / loc.CONFIRM_SPLIT
    if split.is_file() and set(input_text(split).split()) != set(rec["queries"]):
        raise SealError(f"{where}: its sealed_set record names other queries than {split}: {_fix(lockdir)}")


def load_sealed_set(lockdir) -> SealedSet | None:
    """The sealed set a lock folder pins (None while it pins no data yet); fails closed on a missing
    record."""
    lockdir = Path(lockdir)
    if not (lockdir / loc.DATA_PINS).is_file():
        return None
    pins = read_json(lockdir / loc.DATA_PINS)
    name = loc.sealed_name(lockdir)
    derived = read_json(lockdir / loc.DERIVED_PINS) if (lockdir / loc.DERIVED_PINS).exists() else {}
    rec = derived.get("sealed_set")
    if rec is None:
        raise SealError(f"{lockdir} pins a sealed file ({name}) but {lockdir / loc.DERIVED_PINS} has no "
                        f"sealed_set record, so the seal cannot know its queries: {_fix(lockdir)}.")
    _check_record(lockdir, rec, pins, name)
    return from_record(lockdir, rec)


def from_record(lockdir, rec: Mapping) -> SealedSet:
    return SealedSet(Path(lockdir), rec["dataset"], rec["corpus_sha256"], rec["file"], rec["file_sha256"],
                     rec["content_sha256"], frozenset(rec["queries"]), frozenset(rec["queries"].values()))


def registry_folders(root, extra: Iterable = ()) -> list[Path]:
    """The repository's lock folders (lockfiles/, lockfiles/studies/*) and the invocation's own, once each."""
    out, seen = [], set()
    for p in [*loc.repository_lockdirs(root), *(Path(e) for e in extra)]:
        if p.resolve() not in seen and p.is_dir():
            seen.add(p.resolve())
            out.append(p)
    return out


def build(root, extra: Iterable = (), skip=None) -> list[SealedSet]:
    """Every sealed set of the registry (``skip``: a lock folder whose record is being written right now)."""
    folders = [p for p in registry_folders(root, extra) if skip is None
               or p.resolve() != Path(skip).resolve()]
    return [s for s in (load_sealed_set(p) for p in folders) if s is not None]


def set_of(sets: Iterable[SealedSet], lockdir) -> SealedSet:
    for s in sets:
        if s.lockdir.resolve() == Path(lockdir).resolve():
            return s
    raise SealError(f"{lockdir} pins no sealed set (no {loc.DATA_PINS}); nothing can be opened there.")


# --------------------------------------------------------------------------- the development side --
@dataclass
class DevelopmentSide:
    """What an invocation's development side reads: ``files`` name -> {sha256, content_sha256}; ``query_ids``
    source -> ids; ``texts`` evaluated query id -> normalised text sha256."""

    lockdir: Path
    dataset: str
    corpus_sha256: str | None
    files: dict = field(default_factory=dict)
    query_ids: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)
    unpinned: list = field(default_factory=list)  # the PinMismatchError of each lock-folder file that differs


def _pinned_read(side: DevelopmentSide, path: Path, check) -> VerifiedFile | None:
    """A lock-folder file read once by ``check`` (its pin check, the jobs' own; None when absent). Bytes that
    are not the pinned ones are recorded on the side: the jobs will use the pinned bytes, so a seal check of
    other bytes vouches for nothing (``check_development_side`` raises the pin mismatch after the
    conflicts)."""
    if not path.is_file():
        return None
    try:
        return check(path)
    except PinMismatchError as exc:
        side.unpinned.append(exc)
        return read_once(path)


def _split_ids(side: DevelopmentSide, path: Path, name: str, pin: Mapping | None) -> set[str]:
    def check(p):
        return read_once(p) if pin is None else verify_against(p, pin["sha256"], f"{name} split list",
                                                                "Restore it from git; never edit it.")
    f = _pinned_read(side, path, check)
    return set(input_text(f).split()) if f is not None else set()


def _candidate_dev_ids(side: DevelopmentSide, path: Path, derived_path: Path, pinned: bool) -> set[str]:
    def check(p):
        return verify_frozen_candidates(derived_path, p)[1] if pinned else read_once(p)
    f = _pinned_read(side, path, check)
    if f is None:
        return set()
    return {r["qid"] for r in csv.DictReader(input_lines(f), delimiter="\t") if r.get("split") == "dev"}


def _verified(path: Path, pin: Mapping | None) -> VerifiedFile | None:
    """The file read once when its bytes carry ``pin``'s sha256 (else None: the job that verifies it
    stops)."""
    if pin is None or not path.is_file():
        return None
    f = read_once(path)
    return f if sha256_file(f) == pin["sha256"] else None


def _add_data(side: DevelopmentSide, pins: Mapping, data_dir: Path, qrels_name: str) -> None:
    """Judged ids of the development qrels and the evaluated queries' texts, from verified copies only
    (an unverified or absent copy is left to the job that verifies it, which runs the same check)."""
    from ..data import beir

    files = pins["files"]
    qrels = _verified(data_dir / qrels_name, files.get(qrels_name))
    if qrels is not None:
        side.query_ids["development qrels"] = set(beir.read_qrels(qrels))
    queries = _verified(data_dir / "queries.jsonl", files.get("queries.jsonl"))
    if queries is not None:
        add_texts(side, beir.read_queries(queries))


def add_texts(side: DevelopmentSide, queries: Mapping[str, str]) -> None:
    """The texts of every query the development analysis evaluates (the split and its candidates)."""
    evaluated = side.query_ids.get("development split", set()) | side.query_ids.get("development candidates",
                                                                                    set())
    for where, ids in side.query_ids.items():
        if where.startswith("run "):
            evaluated |= ids
    side.texts.update({q: text_sha256(queries[q]) for q in evaluated if q in queries})


def development_side(lockdir, data_dir=None, user_runs: Mapping[str, Iterable[str]] | None = None,
                     repinning: Iterable[str] = ()) -> DevelopmentSide:
    """The development side of a lock folder (+ the verified data folder and user runs, when given). The
    files an invocation re-pins (``repinning``: "splits", "candidates") are read as they are, not held to
    their old pins (the re-pinning job checks what it writes)."""
    lockdir = Path(lockdir)
    pins = read_json(lockdir / loc.DATA_PINS)
    files = pins["files"]
    side = DevelopmentSide(lockdir, pins.get("dataset", "scifact"),
                           files.get("corpus.jsonl", {}).get("sha256"))
    qrels_name = loc.pinned_with_role(lockdir, "qrels_dev")
    side.files[qrels_name] = {k: files[qrels_name][k] for k in ("sha256", "content_sha256")
                              if k in files[qrels_name]}
    derived = read_json(lockdir / loc.DERIVED_PINS) if (lockdir / loc.DERIVED_PINS).exists() else {}
    split_pins = {} if "splits" in set(repinning) else (derived.get("splits") or {})
    side.query_ids["development split"] = _split_ids(side, lockdir / "splits" / "dev.txt", "dev",
                                                     split_pins.get("dev"))
    side.query_ids["development candidates"] = _candidate_dev_ids(
        side, lockdir / "candidates" / "candidates.tsv", lockdir / loc.DERIVED_PINS,
        "candidates" in derived and "candidates" not in set(repinning))
    own_sealed = _split_ids(side, lockdir / loc.CONFIRM_SPLIT, "confirm", split_pins.get("confirm"))
    for path, ids in (user_runs or {}).items():
        # the run's own confirmation queries are not dev side
        side.query_ids[f"run {path}"] = set(ids) - own_sealed
    if data_dir is not None:
        _add_data(side, pins, Path(data_dir), qrels_name)
    return side


def conflicts(side: DevelopmentSide, sets: Iterable[SealedSet]) -> list[str]:
    """Every way the development side holds data of a sealed set (empty: none)."""
    out = []
    for s in sets:
        where = f"the sealed set of {s.lockdir} ({s.file}, content sha256 {s.content_sha256[:12]}...)"
        for name, hashes in side.files.items():
            if s.content_sha256 in hashes.values() or s.file_sha256 in hashes.values():
                out.append(f"the development file {name} of {side.lockdir} holds exactly {where}")
        if s.same_corpus(side.dataset, side.corpus_sha256):
            for source, ids in side.query_ids.items():
                shared = sorted(ids & s.query_ids)
                if shared:
                    out.append(f"the {source} of {side.lockdir} holds {len(shared)} sealed query id(s) of "
                               f"{where}, e.g. {shared[:5]}")
        twins = sorted(q for q, h in side.texts.items() if h in s.text_sha256)
        if twins:
            out.append(f"{len(twins)} development query(ies) of {side.lockdir} have the text of a sealed "
                       f"query of {where}, e.g. {twins[:5]}")
    return out


def check_development_side(side: DevelopmentSide, sets: Iterable[SealedSet], action: str) -> None:
    problems = conflicts(side, sets)
    if problems:
        raise SealError(f"REFUSED to {action}: the development side holds sealed judgements or queries:\n  - "
                        + "\n  - ".join(problems) + "\nA sealed set is opened only by its frozen protocol, "
                        "never read by a development run. Fix: draw the development side from other queries "
                        "(a study's lock folder must not swap or copy another's sealed file), or open the "
                        "set through its protocol (snakemake confirm).")
    if side.unpinned:  # the seal checked bytes the jobs will not use: the first such file's pin mismatch
        raise side.unpinned[0]


def verify_record(lockdir, queries: Mapping[str, str], sealed_ids: Iterable[str]) -> None:
    """The lock folder's committed sealed_set record equals the one derived from its verified data now."""
    lockdir = Path(lockdir)
    want = sealed_record(read_json(lockdir / loc.DATA_PINS), queries, sealed_ids)
    derived = read_json(lockdir / loc.DERIVED_PINS) if (lockdir / loc.DERIVED_PINS).exists() else {}
    have = derived.get("sealed_set")
    if have != want:
        what = "is missing" if have is None else "differs from the one derived from the verified data now"
        raise SealError(f"{lockdir / loc.DERIVED_PINS}: the sealed_set record {what}: {_fix(lockdir)}.")


def with_split(side: DevelopmentSide, dev_ids: Iterable[str], queries: Mapping[str, str]) -> DevelopmentSide:
    """The development side as it will be once ``dev_ids`` is its development split (checked before
    writing)."""
    side.query_ids["development split"] = set(dev_ids)
    side.query_ids["development candidates"] = set()
    side.unpinned = []  # the split lists and candidates read from the lock folder are the ones being replaced
    side.texts = {}
    add_texts(side, queries)
    return side
