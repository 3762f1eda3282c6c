"""synthesis.synthesis_audit: the audit's command line written by hand, and what a failed audit does (the
pages that show PASSED removed, the error naming the exit code and the audit's report) with a stand-in audit
script made here in place of scripts/audit."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rerank_study.core.errors import PipelineError
from rerank_study.synthesis import synthesis_audit


def test_the_command_runs_the_audit_isolated_on_every_run_and_configfile():
    cmd = synthesis_audit.command("py", "scripts/audit", "out/syn", ["r/a", "r/b"], ["c.yaml"],
                                  "out/syn/audit.json")
    assert cmd == ["py", "-I", "-S", "-B", "-X", "pycache_prefix=/dev/null/pycache", "scripts/audit",
                   "--synthesis", "out/syn", "--run", "r/a", "--run", "r/b", "--configfile", "c.yaml",
                   "--out", "out/syn/audit.json"]


def job(tmp_path, exit_code: int) -> SimpleNamespace:
    """Rule synthesis's job: its pages written, an audit script that prints and exits with ``exit_code``."""
    script = tmp_path / "audit.py"
    script.write_text(f"import sys\nprint('check x: FAILED')\nsys.exit({exit_code})\n")
    out = SimpleNamespace(json=str(tmp_path / "synthesis.json"), audit=str(tmp_path / "audit.json"),
                          md=str(tmp_path / "synthesis.md"), html=str(tmp_path / "synthesis.html"))
    for page in (out.md, out.html):
        Path(page).write_text(synthesis_audit.PASSED)
    params = SimpleNamespace(audit=(sys.executable, str(script)), runs=["r/a"], configfiles=[])
    return SimpleNamespace(output=out, params=params)


def test_a_passing_audit_keeps_the_pages(tmp_path):
    sm = job(tmp_path, 0)
    synthesis_audit.audited(sm)
    assert (tmp_path / "synthesis.md").read_text() == synthesis_audit.PASSED
    assert (tmp_path / "synthesis.html").exists()


def test_a_failed_audit_removes_the_pages_and_names_its_report(tmp_path):
    sm = job(tmp_path, 3)
    with pytest.raises(PipelineError, match=r"the audit of this synthesis FAILED \(exit 3\); nothing of it "
                                            r"is to be trusted. Its report:\ncheck x: FAILED\n"):
        synthesis_audit.audited(sm)
    assert not (tmp_path / "synthesis.md").exists() and not (tmp_path / "synthesis.html").exists()
