"""seal.ledger: openings belong to the sealed set, numbered across every ledger that records it."""

from __future__ import annotations

import pytest

from rerank_study.core.errors import SealError
from rerank_study.seal import ledger


def _line(source, n, **e):
    return ledger.Line(source, n, e, e.pop("set_key", "S"))


def test_openings_are_numbered_per_sealed_set_across_ledgers():
    lines = [_line("a", 1, event="started", protocol_sha256="P", opening=1, run="r1"),
             _line("b", 4, event="started", protocol_sha256="P", opening=2, run="r2"),
             _line("b", 5, event="completed", protocol_sha256="P", opening=2, run="r2"),
             _line("c", 1, event="started", protocol_sha256="Q", opening=1, run="q1", set_key="T")]
    rows = ledger.openings(lines, lambda ln: ln.set_key == "S")
    assert [(r["opening"], r["source"], r["line"], bool(r["completed"])) for r in rows] == [(1,
                                                                                             "a", 1, False),
                                                                                            (2, "b", 4, True)]
    assert ledger.next_opening(rows) == 3 \
        and ledger.next_opening(ledger.openings(lines, lambda ln: ln.set_key == "T")) == 2


def test_a_line_without_a_set_key_belongs_to_its_folders_set(tmp_path):
    parsed = ledger.parse('{"event": "started", "opening": 1, "protocol_sha256": "P"}\n', "x")
    assert ledger.lines_of("x", parsed, "FOLDER")[0].set_key == "FOLDER"
    parsed = ledger.parse('{"event": "started", "opening": 1, "sealed_set": "OWN"}\n', "x")
    assert ledger.lines_of("x", parsed, "FOLDER")[0].set_key == "OWN"


def test_record_start_refuses_a_number_taken_in_another_ledger(tmp_path):
    other = [_line("elsewhere", 3, event="started", protocol_sha256="P", opening=1, run="r1")]
    entry = {"event": "started", "protocol_sha256": "P", "opening": 1, "run": "r1", "sealed_set": "S"}
    belongs = lambda ln: ln.set_key == "S"  # noqa: E731
    with pytest.raises(SealError, match="opening 1 of the sealed set S is already started .* number 2"):
        ledger.record_start(tmp_path, entry, lambda: other, belongs)
    assert not (tmp_path / "confirmation_ledger.jsonl").read_text()
    assert ledger.record_start(tmp_path, dict(entry, opening=2), lambda: other, belongs) == 1
