"""seal.family: a family of studies frozen before any of them opens, and decided on their completed openings.

Every expected value is written by hand: the ledger lines below (what fetch_sealed_qrels and record_opening
write, reduced to the keys the plan reads), the times, the pooled block of a synthesis, and the messages."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from rerank_study.core.errors import SealError
from rerank_study.seal import family, guard, ledger, method

A, B, OTHER = "a" * 64, "b" * 64, "c" * 64
FROZEN_AT = "2026-12-01T10:00:00+00:00"
PROTOCOL = {"name": "fam", "studies": [
    {"name": "alpha", "lockdir": "lockfiles/studies/alpha", "protocol_sha256": A},
    {"name": "beta", "lockdir": "lockfiles/studies/beta", "protocol_sha256": B}]}


def started(sha: str, opening: int, time: str) -> dict:
    return {"event": "started", "protocol_sha256": sha, "opening": opening,
            "run": f"confirm-{sha[:12]}-{opening}", "time": time}


def completed(sha: str, opening: int, time: str, started_time: str) -> dict:
    return {"event": "completed", "protocol_sha256": sha, "opening": opening,
            "run": f"confirm-{sha[:12]}-{opening}", "time": time, "started_time": started_time}


def rows(*entries: dict) -> list[dict]:
    """The openings of one study's sealed set, read by seal.ledger from hand-written ledger lines."""
    lines = ledger.lines_of("lockfiles/studies/x/confirmation_ledger.jsonl",
                            [(n, e) for n, e in enumerate(entries, start=1)], "set-x")
    return ledger.openings(lines, lambda ln: True)


def opened(sha: str, start: str = "2026-12-02T08:00:00+00:00", done: str = "2026-12-02T09:00:00+00:00",
           opening: int = 1) -> list[dict]:
    return [started(sha, opening, start), completed(sha, opening, done, start)]


def found(alpha: list[dict], beta: list[dict], alpha_sha: str = A, beta_sha: str = B) -> dict:
    return {"alpha": {"protocol_sha256": alpha_sha, "openings": rows(*alpha), "unseal": "OPEN-ALPHA"},
            "beta": {"protocol_sha256": beta_sha, "openings": rows(*beta), "unseal": "OPEN-BETA"}}


def refusal(found_: dict) -> str:
    with pytest.raises(SealError) as exc:
        family.confirmation_plan(PROTOCOL, FROZEN_AT, found_)
    assert str(exc.value).startswith("REFUSED: the family 'fam' (frozen at 2026-12-01T10:00:00+00:00) cannot "
                                     "be confirmed; nothing was computed:")
    return str(exc.value)


def test_every_study_opened_after_the_family_froze_gives_each_its_completed_opening():
    plan = family.confirmation_plan(PROTOCOL, FROZEN_AT, found(opened(A), opened(B)))
    assert plan == {
        "alpha": {"run": "confirm-aaaaaaaaaaaa-1", "opening": 1, "protocol_sha256": A,
                  "started": "2026-12-02T08:00:00+00:00", "completed": "2026-12-02T09:00:00+00:00"},
        "beta": {"run": "confirm-bbbbbbbbbbbb-1", "opening": 1, "protocol_sha256": B,
                 "started": "2026-12-02T08:00:00+00:00", "completed": "2026-12-02T09:00:00+00:00"}}


def test_a_reproduction_does_not_replace_the_first_opening():
    again = opened(B) + opened(B, "2026-12-03T08:00:00+00:00", "2026-12-03T09:00:00+00:00", opening=2)
    plan = family.confirmation_plan(PROTOCOL, FROZEN_AT, found(opened(A), again))
    assert plan["beta"]["run"] == "confirm-bbbbbbbbbbbb-1" and plan["beta"]["opening"] == 1


def test_a_study_not_opened_yet_is_refused_with_its_opening_command():
    text = refusal(found(opened(A), []))
    assert ("study 'beta' has not opened yet: no ledger records an opening of its sealed set under protocol "
            f"{B}. Fix: open it: OPEN-BETA") in text
    assert "alpha" not in text


def test_a_study_opened_before_the_family_froze_is_refused():
    early = opened(A, "2026-12-01T09:59:59+00:00", "2026-12-01T11:00:00+00:00")
    text = refusal(found(early, opened(B)))
    assert ("study 'alpha': opening 1 (confirm-aaaaaaaaaaaa-1) started at 2026-12-01T09:59:59+00:00 "
            "(lockfiles/studies/x/confirmation_ledger.jsonl line 1), before the family was frozen at "
            "2026-12-01T10:00:00+00:00") in text
    assert "a family is frozen before any of its studies opens" in text


def test_an_opening_in_the_same_second_as_the_freezing_is_after_it_and_a_naive_time_is_utc():
    same = opened(A, "2026-12-01T10:00:00+00:00")
    naive_before = opened(B, "2026-12-01T09:00:00")
    text = refusal(found(same, naive_before))
    assert "study 'alpha'" not in text
    assert "study 'beta': opening 1 (confirm-bbbbbbbbbbbb-1) started at 2026-12-01T09:00:00 " in text


def test_an_opening_whose_time_cannot_be_read_counts_as_before():
    text = refusal(found(opened(A), opened(B, "yesterday")))
    assert "study 'beta': opening 1 (confirm-bbbbbbbbbbbb-1) started at yesterday" in text


def test_a_study_whose_protocol_changed_since_the_family_froze_is_refused():
    text = refusal(found(opened(A), [], beta_sha=OTHER))
    assert (f"study 'beta': its protocol (lockfiles/studies/beta/protocol.json) has sha256 {OTHER}, the "
            f"family recorded {B}.") in text
    assert "has not opened yet" not in text  # one problem, one message
    text = refusal(found(opened(A), [], beta_sha=None))
    assert (f"study 'beta': its protocol (lockfiles/studies/beta/protocol.json) has sha256 none (no "
            f"protocol.json), the family recorded {B}.") in text


def test_an_opening_under_another_protocol_is_refused():
    text = refusal(found(opened(A), opened(OTHER)))
    assert (f"study 'beta': lockfiles/studies/x/confirmation_ledger.jsonl line 1 records opening 1 of its "
            f"sealed set under protocol {OTHER}, not {B} (the one the family recorded).") in text


def test_an_opening_started_and_not_completed_is_refused_saying_how_to_finish_it():
    text = refusal(found(opened(A), [started(B, 1, "2026-12-02T08:00:00+00:00")]))
    assert ("study 'beta': opening 1 (confirm-bbbbbbbbbbbb-1) started at 2026-12-02T08:00:00+00:00 and has "
            "not completed") in text
    assert "rerun OPEN-BETA" in text
    # the unfinished look stays recorded; the next opening of the same protocol, once completed, is read
    later = opened(B, "2026-12-03T08:00:00+00:00", "2026-12-03T09:00:00+00:00", opening=2)
    plan = family.confirmation_plan(PROTOCOL, FROZEN_AT, found(
        opened(A), [started(B, 1, "2026-12-02T08:00:00+00:00"), *later]))
    assert plan["beta"]["run"] == "confirm-bbbbbbbbbbbb-2" and plan["beta"]["opening"] == 2


def test_every_study_that_is_not_ready_is_named_at_once():
    early = opened(A, "2026-11-30T00:00:00+00:00", "2026-11-30T01:00:00+00:00")
    text = refusal(found(early, []))
    assert text.count("\n  - ") == 2
    assert "study 'alpha': opening 1" in text and "study 'beta' has not opened yet" in text


def test_the_decision_is_the_lower_bound_strictly_above_the_threshold():
    pooled = {"weighting": "datasets", "estimate": 0.05, "interval": [0.021, 0.08],
              "percentiles": [2.5, 97.5]}
    met = family.decision(pooled, 0.02, "RULE")
    assert met == {"rule": "RULE", "weighting": "datasets", "estimate": 0.05, "interval": [0.021, 0.08],
                   "lower_bound": 0.021, "threshold": 0.02, "met": True}
    assert family.decision(pooled, 0.021, "RULE")["met"] is False  # on the threshold: not above it
    assert family.decision(dict(pooled, interval=[-0.01, 0.08]), 0.0, "RULE")["met"] is False
    assert family.decision_text("fam", met) == (
        "Family 'fam': pooled primary delta 0.050000 (weighting datasets), interval [0.021000, 0.080000]; "
        "lower bound 0.021000 vs threshold 0.02: MET: the family confirms.")


def test_the_protocol_states_its_rule_and_the_studies_must_share_the_threshold():
    block = {"weighting": "queries", "tau2": "paule-mandel", "B": 1000, "seed": 3, "level": 0.9,
             "family": ["blend-ce"]}
    p = family.build_protocol("fam", PROTOCOL["studies"], block, 0.02, "blend-ce", "ndcg@10", FROZEN_AT)
    assert p["threshold"] == 0.02 and p["synthesis"] == block and p["studies"] == PROTOCOL["studies"]
    assert p["decision_rule"].startswith(
        "The family confirms when the lower bound of the pooled primary delta's 0.9 interval (stratified "
        "grouped bootstrap, weighting queries, B 1000, seed 3)")
    assert "lies above the practical threshold 0.02" in p["decision_rule"]
    assert family.common_value("x", {"alpha": 0.02, "beta": 0.02}, "fix") == 0.02
    with pytest.raises(SealError, match=r"disagree on the threshold \(alpha: 0\.02, beta: 0\.03\)"):
        family.common_value("the threshold", {"alpha": 0.02, "beta": 0.03}, "fix")


def test_a_family_is_a_name_under_lockfiles_families_or_a_folder(tmp_path):
    assert family.family_folder("beir-5", ROOT) == ROOT / "lockfiles" / "families" / "beir-5"
    assert family.family_folder(str(tmp_path / "f"), ROOT) == tmp_path / "f"
    with pytest.raises(SealError, match="is not a name"):
        family.family_folder("a b", ROOT)


def write_family(folder, protocol: dict, frozen_line: bool = True) -> str:
    """A family's files in freeze_family's layout (its JSON written compactly here: what is read back is the
    JSON, and the sha256 is of the bytes written)."""
    import hashlib

    folder.mkdir(parents=True)
    text = json.dumps(protocol, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sha = hashlib.sha256(text.encode()).hexdigest()
    (folder / "family_protocol.json").write_text(text, encoding="utf-8")
    (folder / "family_protocol.sha256").write_text(f"{sha}  family_protocol.json\n", encoding="utf-8")
    if frozen_line:
        (folder / "family_ledger.jsonl").write_text(json.dumps(
            {"event": "frozen", "time": FROZEN_AT, "family_protocol_sha256": sha}) + "\n", encoding="utf-8")
    return sha


def test_the_family_protocol_is_checked_against_its_sha256_and_its_frozen_line(tmp_path):
    sha = write_family(tmp_path / "fam", PROTOCOL)
    got_sha, got, frozen = family.verified_family(tmp_path / "fam")
    assert (got_sha, got, frozen["time"]) == (sha, PROTOCOL, FROZEN_AT)
    (tmp_path / "fam" / "family_protocol.json").write_text(json.dumps(dict(PROTOCOL, name="other")))
    with pytest.raises(SealError, match="changed since it was frozen .* restore the family's files from git"):
        family.verified_family(tmp_path / "fam")
    write_family(tmp_path / "unrecorded", PROTOCOL, frozen_line=False)
    with pytest.raises(SealError, match="does not record the freezing of the family protocol"):
        family.verified_family(tmp_path / "unrecorded")
    with pytest.raises(SealError, match="no family protocol at .* freeze-family --family <name>"):
        family.verified_family(tmp_path / "absent")


def test_a_family_folder_is_no_studys_method():
    assert method.study_pins("lockfiles/families/beir-5/family_protocol.json")
    assert method.study_pins("lockfiles/studies/nfcorpus/data_pins.json")
    assert not method.study_pins("lockfiles/data_pins.json")
    assert guard.another_studys("lockfiles/families/beir-5/family_ledger.jsonl", ROOT / "lockfiles", ROOT, {})


def test_the_completed_line_records_the_openings_and_the_decision():
    fam = {"name": "fam", "sha256": "f" * 64, "openings": {"alpha": {"run": "confirm-aaaaaaaaaaaa-1"}}}
    d = {"met": True, "lower_bound": 0.021}
    assert family.completed_entry(fam, "s" * 64, d, FROZEN_AT) == {
        "event": "completed", "time": FROZEN_AT, "family": "fam", "family_protocol_sha256": "f" * 64,
        "openings": {"alpha": {"run": "confirm-aaaaaaaaaaaa-1"}}, "synthesis_sha256": "s" * 64,
        "decision": {"met": True, "lower_bound": 0.021}}
