"""seal.environment (the installed environment is the lock, file for file) and seal.ledger (openings belong to
the sealed set, across every ledger)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from conftest import ROOT

from rerank_study.errors import SealError
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


class _Dist:
    def __init__(self, name, version, record=""):
        self.metadata, self.version, self._record = {"Name": name}, version, record

    def read_text(self, name):
        return self._record if name == "RECORD" else None


def test_version_differences_are_named():
    found = [_Dist("NumPy", "2.0"), _Dist("torch", "2.13.0+cpu"), _Dist("extra-pkg", "1"), _Dist("pip", "99")]
    out = env._version_problems(found, {"numpy": "2.1", "torch": "2.13.0", "scipy": "1.0"})
    assert out == ["extra-pkg 1 is installed but not in the lock", "numpy 2.0 is installed, the "
                   "lock says 2.1",
                   "scipy 1.0 is in the lock but not installed"]


def test_record_hashes_and_unlisted_files(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text("x = 1\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x = 1\n").digest()).rstrip(b"=").decode()
    listed: set = set()
    good = _Dist("pkg", "1", f"pkg/mod.py,sha256={digest},6\npkg-1.dist-info/RECORD,,\n")
    assert env._record_problems(good, tmp_path, listed) == []
    (tmp_path / "pkg/mod.py").write_text("x = 2\n")
    assert env._record_problems(good, tmp_path, set()) == [f"{tmp_path}/pkg/mod.py differs from pkg's RECORD"]
    (tmp_path / "sitecustomize.py").write_text("print('planted')\n")
    assert env._unlisted(tmp_path, listed) == [f"{tmp_path}/sitecustomize.py is in site-packages but no "
                                               "distribution's RECORD lists it"]


def test_hooks_and_variables_that_add_code_to_a_job(tmp_path, monkeypatch):
    (tmp_path / "workflow").mkdir()
    assert env._hook_problems(tmp_path) == [] or all("workflow" not in p
                                                     for p in env._hook_problems(tmp_path))
    (tmp_path / "workflow/usercustomize.py").write_text("")
    (tmp_path / "workflow/x.pth").write_text("import os\n")
    found = [p for p in env._hook_problems(tmp_path) if str(tmp_path) in p]
    assert found == [f"{tmp_path}/workflow/usercustomize.py runs at every interpreter start",
                     f"{tmp_path}/workflow/x.pth runs at every interpreter start"]
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}/workflow:/elsewhere")
    monkeypatch.setenv("LD_PRELOAD", "/lib/evil.so")
    monkeypatch.setenv("PYTHONWARNINGS", "ignore::evil.Warning")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # allowed: it adds no code
    found = [p for p in env._variable_problems(tmp_path) if "PYTHONWARNINGS" in p or "LD_PRELOAD" in p
             or "PYTHONPATH" in p]
    assert found == ["LD_PRELOAD='/lib/evil.so' is set (it adds code to a process)",
                     "PYTHONWARNINGS='ignore::evil.Warning' is set (it adds code to a process)",
                     "PYTHONPATH holds ['/elsewhere'] beyond " f"{tmp_path}/workflow"]


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
