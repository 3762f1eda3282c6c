"""A run file as the reranker (rerank_study.reranker.reranker_run): a run over the synthetic study's frozen
candidates
is accepted when it scores exactly every candidate of every query of its split; a query outside the split, a
missing, extra or repeated candidate and a non-finite score are refused naming the file, the query, the
document, the expected and found value and the fix; a query whose candidates all have one score is listed
(warned), not refused; the scores table keeps the run's values in candidate order; a listwise run's
rank-derived scores give its rank order."""

from __future__ import annotations

import csv
import shutil

import pytest
from conftest import STUDY_DIR

from rerank_study.rankings import candidates, ranking
from rerank_study.reranker import reranker_run

LOCK = STUDY_DIR / "synthetic" / "lockfiles"
CFG = {"study": {"name": "runfile-test"}, "candidates": {"depth": 20}}
Q01 = ["d077", "d045", "d065", "d024", "d040", "d025", "d067", "d018", "d076", "d058", "d026", "d029", "d060",
       "d070", "d066", "d001", "d017", "d053", "d038", "d063"]  # q01's frozen candidates, by rank (the table)


def frozen(split: str) -> dict[str, list[str]]:
    """{qid: candidates by rank} of one split, read here with csv (not the code under test)."""
    qids = (LOCK / "splits" / f"{split}.txt").read_text().split()
    out: dict[str, list[str]] = {q: [] for q in qids}
    with open(LOCK / "candidates" / "candidates.tsv", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["qid"] in out:
                out[row["qid"]].append(row["doc_id"])
    return out


def lines(cands: dict[str, list[str]]) -> list[str]:
    """A valid run: candidate i of a query scores 100 - i."""
    return [f"{q} Q0 {d} {i} {100 - i} sys\n" for q, docs in cands.items()
            for i, d in enumerate(docs, start=1)]


def write(tmp_path, rows: list[str], name="my.run"):
    path = tmp_path / name
    path.write_text("".join(rows))
    return path


def refusal(tmp_path, rows, split="development") -> str:
    with pytest.raises(reranker_run.RunFileError) as exc:
        reranker_run.checked_run(CFG, LOCK, write(tmp_path, rows), split, "nothing was frozen")
    return str(exc.value)


def test_the_frozen_candidates_are_those_the_test_names():
    assert frozen("dev")["q01"] == Q01 and len(frozen("dev")) == 20 and len(frozen("confirm")) == 12


def test_a_run_of_exactly_the_candidates_is_read_with_its_scores(tmp_path):
    run = reranker_run.checked_run(CFG, LOCK, write(tmp_path, lines(frozen("dev"))), "development", "x")
    assert sorted(run) == sorted(frozen("dev"))
    assert run["q01"][:2] == [("d077", "99"), ("d045", "98")]
    rows = reranker_run.score_rows(run, {"q01": Q01[:3]}, ["q01"])
    assert rows == [("q01", "d077", 1, 99.0), ("q01", "d045", 2, 98.0), ("q01", "d065", 3, 97.0)]


def test_a_query_outside_the_split_is_refused_naming_it(tmp_path):
    msg = refusal(tmp_path, lines(frozen("dev")) + ["q03 Q0 d030 1 5.0 sys\n", "zz9 Q0 d001 1 1.0 sys\n"])
    outside = "expected only the 20 development queries, found 1 line(s) of a query outside them"
    assert f"query q03: {outside} (a confirmation query: its scores are submitted when the protocol is " \
           "frozen)" in msg
    assert f"query zz9: {outside} (not a query of the study's split lists)" in msg
    assert f"file: {tmp_path / 'my.run'}" in msg and "expected: 20 queries x 20 candidates = 400 lines" in msg
    assert "found: 402 lines for 22 queries" in msg and "fix: rerank exactly the frozen candidates" in msg
    assert "(nothing was frozen)" in msg


def test_a_missing_and_an_extra_candidate_are_refused_naming_query_and_document(tmp_path):
    rows = [r for r in lines(frozen("dev")) if not r.startswith("q01 Q0 d058 ")]
    rows.append("q02 Q0 d999 21 0.5 sys\n")
    msg = refusal(tmp_path, rows)
    assert "query q01, document d058 (candidate rank 10): expected one score line, found none (a missing " \
           "candidate)" in msg
    assert "query q02, document d999: expected only its 20 frozen candidates, found a score line (not a " \
           "candidate)" in msg


def test_a_missing_query_is_refused(tmp_path):
    msg = refusal(tmp_path, [r for r in lines(frozen("dev")) if not r.startswith("q36 ")])
    assert "query q36: expected a score for each of its 20 candidates, found none (the query is " \
           "missing)" in msg


def test_a_repeated_candidate_and_a_non_finite_score_are_refused_naming_the_line(tmp_path):
    rows = lines(frozen("dev"))
    msg = refusal(tmp_path, rows[:5] + ["q01 Q0 d045 6 3.0 sys\n"] + rows[5:])
    assert "line 6: document d045 appears twice for query q01" in msg and "fix: rerank exactly" in msg
    for bad in ("nan", "inf", "-inf", "high"):
        msg = refusal(tmp_path, rows[:2] + [f"q01 Q0 d065 3 {bad} sys\n"] + rows[3:])
        assert f"line 3: query q01, document d065: score '{bad}' is not a finite plain decimal number" in msg


def test_a_score_python_reads_but_trec_eval_reads_otherwise_is_refused(tmp_path):
    """Python's float takes digit separators, full-width and Arabic-Indic digits and words ("infinity") that
    C's atof (trec_eval's reader) reads as another value, and atof reads "0x1p3" where float refuses it:
    float("1_000") == 1000.0 where atof gives 1.0; float("\uff11\uff12") == 12.0 where atof gives 0.0. Each
    is refused; plain decimals with sign, point and exponent are read."""
    rows = lines(frozen("dev"))
    for bad in ("1_000", "\uff11\uff12", "\u0661\u0662", "infinity", "0x1p3", "1e", "."):
        msg = refusal(tmp_path, rows[:2] + [f"q01 Q0 d065 3 {bad} sys\n"] + rows[3:])
        assert f"line 3: query q01, document d065: score {bad!r} is not a finite plain decimal number" in msg
    for good in ("+1.5", "-.5", "7.", "1E-3", "2e+10"):
        assert candidates.PLAIN_NUMBER.fullmatch(good), good


def test_the_confirmation_split_takes_only_confirmation_queries(tmp_path):
    reranker_run.checked_run(CFG, LOCK, write(tmp_path, lines(frozen("confirm"))), "confirmation", "x")
    msg = refusal(tmp_path, lines(frozen("confirm")) + lines({"q01": Q01}), split="confirmation")
    assert "query q01: expected only the 12 confirmation queries, found 20 line(s) of a query outside " \
           "them (a development query)" in msg


def test_all_equal_scores_are_listed_not_refused(tmp_path):
    cands = frozen("dev")
    rows = [r for r in lines(cands) if not r.startswith("q05 ")]
    rows += [f"q05 Q0 {d} 1 7.5 sys\n" for d in cands["q05"]]
    run = reranker_run.checked_run(CFG, LOCK, write(tmp_path, rows), "development", "x")
    assert reranker_run.tied_queries(run, cands, list(cands)) == ["q05"]
    # trec_eval's order breaks the tie: document id as a string, descending
    scores = {d: s for d, s in reranker_run.scores_of(run, "q05").items()}
    assert ranking.order_by_score(scores) == sorted(cands["q05"], reverse=True)
    assert "ranked by document id as a string, descending" in reranker_run.TIE_WARNING


def test_a_listwise_runs_rank_derived_scores_give_its_rank_order(tmp_path):
    listwise = ["d063", "d001", "d077", "d045"]  # the order a listwise reranker returned
    rows = [f"q01 Q0 {d} {r} {len(listwise) + 1 - r} llm\n" for r, d in enumerate(listwise, start=1)]
    run = reranker_run.read(write(tmp_path, rows), "s", "fix", "x")
    assert ranking.order_by_score(reranker_run.scores_of(run, "q01")) == listwise


def test_the_pinned_development_run_must_be_the_lock_folders_copy(tmp_path):
    lock = tmp_path / "lock"
    shutil.copytree(LOCK, lock)
    with pytest.raises(reranker_run.RunFileError) as exc:
        reranker_run.check_pinned(CFG, lock)
    assert "no development run is pinned" in str(exc.value)
    assert "repin=reranker_run run_file=" in str(exc.value)
