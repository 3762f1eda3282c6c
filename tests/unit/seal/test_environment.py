"""seal.environment: the lock's library versions are installed; the rest is recorded."""

from __future__ import annotations

import hashlib

from conftest import ROOT

from rerank_study.seal import environment as env


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
