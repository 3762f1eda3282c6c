"""A run file as the reranker (``study.reranker_kind: run``): the reranker's scores of the frozen candidates
come from a pinned TREC run made by any system, and no model is loaded.

* The development run is copied byte for byte into ``<lockdir>/reranker/dev.trec`` and pinned
  (``derived_pins.json`` -> ``reranker_run``) by ``repin=reranker_run run_file=FILE``; the confirmation
  queries' run is copied into ``<lockdir>/reranker/confirm.trec`` when the protocol is frozen, and its sha256
  is a field of the protocol (``seal.protocol``): an opening evaluates exactly that file.
* A run is read strictly (``candidates.read_user_run``: six fields, finite scores, no document twice for a
  query) and must cover exactly the frozen candidates of its queries (``coverage_problems``): every query of
  its split, each of its ``depth`` candidates once, no other document, no other query.
* Its order is trec_eval's (``ranking.order_by_score``: score descending, ties by document id string
  descending; the rank column is not read). A listwise reranker that gives only an order writes rank-derived
  scores, so its rank order is the score order. A query whose candidates all have one score is ranked by
  document id alone (``tied_queries``: warned in the log and the report, not refused).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core import layout
from ..core.errors import MalformedInputError, PipelineError
from ..core.fileio import VerifiedFile, read_once, sha256_bytes
from ..rankings import candidates
from ..settings.config import config_arg

SCORES_HEADER = ("qid", "doc_id", "r0", "score")
PIN_NAME = "reranker_run"  # its key in derived_pins.json
TIE_RULE = ("score descending, then document id as a string descending (trec_eval's order; the rank column "
            "is not read)")
TIE_WARNING = ("every candidate of these queries has the same score: they are ranked by document id as a "
               "string, descending (trec_eval's tie rule), so the reranker's ranking of them says nothing")


class RunFileError(PipelineError):
    """A reranker run that cannot be the study's reranker: the message names the file, each query and
    document, the expected and found value and the fix."""


def refuse(study: str, path, problems: Sequence[str], expected: str, found: str, fix: str,
           action: str) -> None:
    shown = list(problems[:20]) + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
    raise RunFileError(f"STUDY {study!r}: the reranker run {path} is refused ({action}):\n  - "
                       + "\n  - ".join(shown)
                       + f"\n  file: {path}\n  expected: {expected}\n  found: {found}\n  fix: {fix}")


def read(path, study: str, fix: str, action: str) -> dict[str, list[tuple[str, str]]]:
    """{qid: [(doc id, score text), ...]} of a run file; a malformed line, a repeated document or a non-finite
    score is refused naming the line, the query and the document."""
    try:
        return candidates.read_user_run(path)
    except MalformedInputError as exc:
        refuse(study, path, [f"line {exc.line_no}: {exc.problem}"],
               "one TREC line `qid Q0 docid rank score tag` "
               "per (query, candidate), a finite score each", f"line {exc.line_no} as said", fix, action)
    raise AssertionError("unreachable")


def query_problems(run: Mapping, queries: Sequence[str], others: Mapping[str, str], split: str) -> list[str]:
    """A query of the run outside ``queries`` (``others``: the study's other queries, id -> what they are)."""
    out = []
    for q in sorted(set(run) - set(queries)):
        what = others.get(q, "not a query of the study's split lists")
        out.append(f"query {q}: expected only the {len(queries)} {split} queries, found {len(run[q])} "
                   f"line(s) of a query outside them ({what})")
    return out


def candidate_problems(run: Mapping, frozen: Mapping[str, Sequence[str]], queries: Sequence[str],
                       depth: int) -> list[str]:
    """Every analysed query's candidates (its frozen top ``depth``), each scored, and nothing else."""
    out = []
    for q in queries:
        want = list(frozen.get(q, []))[:depth]
        got = [d for d, _ in run.get(q, [])]
        if not got:
            out.append(f"query {q}: expected a score for each of its {len(want)} candidates, found none (the "
                       "query is missing)")
            continue
        for rank, d in enumerate(want, start=1):
            if d not in got:
                out.append(f"query {q}, document {d} (candidate rank {rank}): expected one score line, found "
                           "none (a missing candidate)")
        out += [f"query {q}, document {d}: expected only its {len(want)} frozen candidates, found a score "
                "line (not a candidate)" for d in got if d not in set(want)]
    return out


def coverage_problems(run: Mapping, frozen: Mapping[str, Sequence[str]], queries: Sequence[str], depth: int,
                      others: Mapping[str, str], split: str) -> list[str]:
    """Everything that keeps ``run`` from being the reranker of ``queries``' frozen candidates."""
    return query_problems(run, queries, others, split) + candidate_problems(run, frozen, queries, depth)


def scores_of(run: Mapping[str, Sequence[tuple[str, str]]], q: str) -> dict[str, float]:
    return {d: float(s) for d, s in run.get(q, [])}


def tied_queries(run: Mapping, cands: Mapping[str, Sequence[str]], queries: Sequence[str]) -> list[str]:
    """The queries (of ``queries``, with 2 or more candidates) whose candidates all have the same score."""
    out = []
    for q in queries:
        scores = scores_of(run, q)
        values = {scores[d] for d in cands[q]}
        if len(cands[q]) > 1 and len(values) == 1:
            out.append(q)
    return out


def score_rows(run: Mapping, cands: Mapping[str, Sequence[str]], queries: Sequence[str]) -> list[tuple]:
    """reranker_scores.tsv: one row per analysed candidate (queries in order, candidates by r0), the run's
    score as a float (written as its shortest round-trip text)."""
    rows = []
    for q in queries:
        scores = scores_of(run, q)
        for r0, d in enumerate(cands[q], start=1):
            if not math.isfinite(scores[d]):
                raise ValueError(f"query {q}, document {d}: non-finite score {scores[d]!r}")
            rows.append((q, d, r0, scores[d]))
    return rows


def pin(rel: str, data: bytes, given_as: str, n_queries: int, depth: int) -> dict:
    """The pin of a run file whose checked bytes ``data`` are copied into the lock folder at ``rel``."""
    return {"file": rel, "sha256": sha256_bytes(data), "bytes": len(data), "given_as": given_as,
            "queries": n_queries, "depth": depth, "order": TIE_RULE}


def identity(reranker: str, run_pin: Mapping) -> str:
    """What the manifest and the report call the reranker: its name and the pinned file (the sha256 beside
    it)."""
    return f"{reranker} run:{run_pin['file']}"


def record(reranker: str, run_pin: Mapping, queries: Sequence[str], n_pairs: int,
           tied: Sequence[str]) -> dict:
    """reranker_run.json: what the reranker of this run is (file, sha256), what was read from it, the ties."""
    return {"reranker": reranker, "file": run_pin["file"], "sha256": run_pin["sha256"],
            "identity": identity(reranker, run_pin), "weights_sha256": run_pin["sha256"],
            "queries": len(queries), "pairs": n_pairs, "all_tied_queries": list(tied), "tie_rule": TIE_RULE}


def lock_path(lockdir, kind: str) -> Path:
    """The lock folder's copy of the development or confirmation run."""
    return (Path(lockdir) / (layout.RERANKER_CONFIRM_RUN if kind == "confirmation"
                             else layout.RERANKER_DEV_RUN))


# ------------------------------------------------------------- checks of a study's run-file reranker --
def frozen_and_splits(lockdir) -> tuple[dict, list[str], list[str]]:
    """The frozen candidate table ({qid: docs}) and the development and confirmation split lists, each checked
    against its pin in derived_pins.json and parsed from the checked bytes."""
    from ..core.fileio import read_json
    from ..data import splits
    from ..data.pins import verify_against, verify_frozen_candidates

    lock = Path(lockdir)
    split_pins = read_json(lock / layout.DERIVED_PINS)["splits"]
    lists = [splits.read_split(verify_against(lock / rel, split_pins[name]["sha256"],
                                              f"the {name} split list", "Restore it from git; "
                                              "never edit it."))
             for name, rel in (("dev", layout.SPLIT_DEV), ("confirm", layout.SPLIT_CONFIRM))]
    _, table = verify_frozen_candidates(lock / layout.DERIVED_PINS, lock / layout.CANDIDATES)
    return candidates.read_candidates(table), lists[0], lists[1]


def checked_run(cfg: dict, lockdir, path, split: str, action: str) -> dict:
    """The run file at ``path`` read and checked as the reranker of the ``split`` ("development" or
    "confirmation") queries' frozen candidates (``candidates.depth`` deep); refused otherwise."""
    study, depth = cfg["study"]["name"], cfg["candidates"]["depth"]
    frozen, dev, confirm = frozen_and_splits(lockdir)
    queries, other = (dev, confirm) if split == "development" else (confirm, dev)
    other_kind = "a confirmation query: its scores are submitted when the protocol is frozen" \
        if split == "development" else "a development query"
    split_list = Path(lockdir) / (layout.SPLIT_DEV if split == "development" else layout.SPLIT_CONFIRM)
    fix = (f"rerank exactly the frozen candidates ({Path(lockdir) / layout.CANDIDATES}: the top {depth} of "
           f"each of the {len(queries)} {split} queries of {split_list}) and write one line `qid Q0 docid "
           "rank score tag` per candidate, with a finite score (a listwise reranker: rank-derived scores, "
           "e.g. n + 1 - rank)")
    run = read(path, study, fix, action)
    problems = coverage_problems(run, frozen, queries, depth, {q: other_kind for q in other}, split)
    if problems:
        n_lines = sum(len(v) for v in run.values())
        refuse(study, path, problems,
               f"{len(queries)} queries x {depth} candidates = {len(queries) * depth} lines",
               f"{n_lines} lines for {len(run)} queries", fix, action)
    return run


def check_pinned(cfg: dict, lockdir) -> VerifiedFile:
    """A development run is pinned in the lock folder and its copy is the pinned one; return the copy with the
    checked bytes."""
    from ..core.fileio import read_json
    from ..data.pins import verify_against

    study, lock = cfg["study"]["name"], Path(lockdir)
    path, derived = lock_path(lock, "development"), lock / layout.DERIVED_PINS
    run_pin = read_json(derived).get(PIN_NAME) if derived.is_file() else None
    if run_pin is None or not path.is_file():
        raise RunFileError(
            f"STUDY {study!r}: its reranker is a run file (study.reranker_kind: run) and no development run "
            f"is pinned.\n  file: {path} (pin: {derived} -> {PIN_NAME})\n  expected: the copied run and its "
            f"pin\n  found: {'no file' if not path.is_file() else 'no pin'}\n  fix: snakemake --config "
            f"{config_arg(cfg)}repin=reranker_run run_file=/path/to/your.run, then commit the lock folder.")
    return verify_against(path, run_pin["sha256"], f"study {study!r}'s reranker run",
                          f"It must be the run pinned in {derived}: restore it from git, or pin another "
                          f"knowingly (delete {path} and its pin in a commit that says why, then "
                          "repin=reranker_run run_file=...).")


def check_study(cfg: dict, lockdir, repin: set) -> None:
    """Parse-time checks of a run-file reranker study: the pinned scorer, no label index, and (re-pinning) a
    run file that covers exactly the development queries' candidates, or (a run) the pinned development
    run."""
    st = cfg["study"]
    where = cfg.get("study_file") or "config/config.yaml"
    if cfg["scorer"] != "pinned":
        raise RunFileError(f"STUDY {st['name']!r}: scorer is {cfg['scorer']}, but a run-file reranker has no "
                           f"stand-in (nothing is scored here).\n  file: {where}\n  fix: set scorer: pinned "
                           "in this study's file.")
    if st["label_index"] is not None:
        raise RunFileError(f"STUDY {st['name']!r}: study.label_index is {st['label_index']}, but a run file "
                           f"has one score per line.\n  file: {where}\n  fix: set study.label_index: null.")
    if "model" in repin:
        raise RunFileError(f"STUDY {st['name']!r}: repin=model pins a cross-encoder, and study.reranker_kind "
                           f"is run (the reranker is a run file).\n  file: {where}\n  fix: pin the run with "
                           "repin=reranker_run run_file=FILE, or set study.reranker_kind: cross-encoder.")
    if cfg["run_file"] and "reranker_run" not in repin and not cfg["unseal"]:
        raise RunFileError(f"STUDY {st['name']!r}: run_file={cfg['run_file']} is read only when the "
                           "development run is pinned (an opening compares it with the frozen confirmation "
                           "run); this run reads the pinned run.\n  fix: drop run_file, or pin it: "
                           "repin=reranker_run run_file=...")
    if "reranker_run" in repin:
        if not cfg["run_file"]:
            raise RunFileError(f"STUDY {st['name']!r}: repin=reranker_run needs the run to pin.\n  file: "
                               "(run_file not set)\n  fix: add --config run_file=/path/to/your.run (TREC "
                               "format).")
        checked_run(cfg, lockdir, read_once(cfg["run_file"]), "development", "nothing was frozen")
    elif not repin and (Path(lockdir) / layout.CANDIDATES).is_file():
        checked_run(cfg, lockdir, check_pinned(cfg, lockdir), "development", "before any job")
