"""seal.status: what ``confirm.py status`` says of a fixture lock folder outside any repository: sealed and
untouched, spent by a look without a protocol, each opening started or completed, where the protocol is
registered, that the ledger is pushed nowhere, and that an opening now would be refused (and why)."""

from __future__ import annotations

import json

from conftest import make_lockdir

from rerank_study.seal import status

P = "p" * 64
STARTED = {"event": "started", "protocol_sha256": P, "opening": 1, "run": "confirm-pppppppppppp-1",
           "time": "2026-12-02T08:00:00+00:00"}
COMPLETED = {**STARTED, "event": "completed", "time": "2026-12-02T09:00:00+00:00",
             "primary": {"mean": 0.031, "reaches_threshold": True}}


def world(tmp_path, *entries: dict):
    """A fixture lock folder in a folder that is no repository, its ledger holding ``entries``."""
    lock = make_lockdir(tmp_path / "lock")
    (lock / "confirmation_ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    cfg = {"resources": str(tmp_path / "resources"), "results": str(tmp_path / "results")}
    return lock, cfg


def test_an_untouched_sealed_set_without_a_protocol_is_sealed(tmp_path):
    lock, cfg = world(tmp_path)
    text, ok = status.describe(lock, tmp_path, cfg)
    lines = text.splitlines()
    assert ok is True and len(lines) == 2
    assert lines[0] == f"no protocol frozen ({lock / 'protocol.json'} absent); the confirmation set is sealed"
    assert lines[1].endswith("; openings recorded in any ledger: 0 (0 completed, 0 started but not "
                             "completed)")


def test_a_look_without_a_protocol_spends_the_set(tmp_path):
    lock, cfg = world(tmp_path, STARTED)
    text, ok = status.describe(lock, tmp_path, cfg)
    assert ok is False
    assert text.startswith(f"no protocol frozen ({lock / 'protocol.json'} absent), but the sealed set has 1 "
                           "recorded opening(s): it is spent, and no protocol can be frozen on it\n")
    assert (f"  opening 1 of pppppppppppp (confirm-pppppppppppp-1), {lock / 'confirmation_ledger.jsonl'} "
            "line 1: STARTED 2026-12-02T08:00:00+00:00 and NOT COMPLETED") in text
    assert "WARNING: this started line is on no remote-tracking branch yet" in text


def test_a_frozen_protocol_its_completed_opening_its_registration_and_an_opening_now(tmp_path):
    registered = {"event": "registered", "protocol_sha256": P, "where": "https://osf.io/abcde",
                  "time": "2026-12-01T12:00:00+00:00"}
    frozen = {"event": "frozen", "protocol_sha256": P, "time": "2026-12-01T10:00:00+00:00"}
    lock, cfg = world(tmp_path, frozen, registered, STARTED, COMPLETED)
    (lock / "protocol.json").write_text("{}")  # not the protocol whose sha256 is recorded
    (lock / "protocol.sha256").write_text(f"{P}  protocol.json\n")
    text, ok = status.describe(lock, tmp_path, {**cfg, "scorer": "pinned"})
    lines = text.splitlines()
    assert ok is False
    assert lines[0] == f"protocol {lock / 'protocol.json'} sha256 {P} (TEST FIXTURE lock folder)"
    assert lines[1] == ("  frozen pppppppppppp at 2026-12-01T10:00:00+00:00 "
                        f"({lock / 'confirmation_ledger.jsonl'} line 1)")
    assert lines[3].endswith(": started 2026-12-02T08:00:00+00:00, completed 2026-12-02T09:00:00+00:00: "
                             "primary mean 0.031, reaches threshold True, labels none")
    assert "registered outside: yes, https://osf.io/abcde (2026-12-01T12:00:00+00:00)" in lines
    assert any(x.startswith("ledger pushed: NO (no remote).") for x in lines)
    assert (f"an opening now would be REFUSED:\nREFUSED: {lock / 'protocol.json'} changed since it was "
            "frozen") in text


def test_a_lock_folder_that_pins_no_sealed_set_is_said_so(tmp_path):
    (tmp_path / "empty").mkdir()
    text, ok = status.describe(tmp_path / "empty", tmp_path, {})
    assert ok is False and "\nthe seal registry cannot be read: " in text
