"""seal.environment (the lock's library versions are installed; the rest is recorded) and seal.ledger
(openings belong to the sealed set, across every ledger)."""

from __future__ import annotations

import hashlib

import pytest
from conftest import ROOT

from rerank_study.core.errors import SealError
from rerank_study.seal import environment as env
from rerank_study.seal import ledger


def test_this_environment_is_the_lock():
    """The suite runs in the venv setup_env.py made from the lockfiles: no difference at all."""
    assert env.environment_problems(ROOT) == []


def test_lock_versions_read_every_pin_and_the_project():
    lock = env.lock_versions(ROOT)
    assert lock["torch"] == "2.13.0" and lock["rerank-study"] == "0.1.0" and lock["numpy"]
    assert len(lock) == 1 + 1 + \
        sum(1 for line in (ROOT / "lockfiles/requirements.lock").read_text().splitlines()
                                    if line and line[0].isalnum() and "==" in line)


def test_version_differences_are_named():
    found = {"numpy": "2.0", "torch": "2.13.0+cpu", "extra-pkg": "1", "pip": "99"}
    out = env.version_problems(found, {"numpy": "2.1", "torch": "2.13.0", "scipy": "1.0"})
    assert out == ["numpy 2.0 is installed, the lock says 2.1", "scipy 1.0 is in the lock but not installed"]


def test_the_started_line_records_what_it_does_not_refuse(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/lib/x.so")
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")
    rec = env.environment_record(ROOT)
    assert rec["variables"]["LD_PRELOAD"] == "/lib/x.so" and rec["variables"]["PYTHONWARNINGS"] == "ignore"
    listing = "".join(f"{n}=={v}\n" for n, v in sorted(env.installed_versions().items()))
    assert rec["distributions_sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert rec["beyond_the_lock"] == sorted(f"{n}=={v}" for n, v in env.installed_versions().items()
                                            if n not in env.lock_versions(ROOT))
    assert isinstance(rec["startup_hooks"], list) and rec["python"]["executable"]


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
