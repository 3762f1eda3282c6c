"""The audit's command line without a run: a folder that is not a run folder exits 2 (from any current
folder); the run folder is required unless reading YAML."""

import subprocess
import sys

from conftest import AUDIT


def test_not_a_run_folder_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(tmp_path)], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "cannot be audited" in proc.stderr
    # from any current folder, the run folder given relative to it
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), "."], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 2 and "cannot be audited" in proc.stderr, proc.stderr


def test_a_run_folder_is_required_unless_reading_yaml():
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT)], capture_output=True, text=True)
    assert proc.returncode == 2 and "required: rundir" in proc.stderr


def test_an_out_the_verdict_cannot_be_written_to_or_that_is_a_run_artefact_is_refused_at_start(tmp_path):
    for out, message in ((tmp_path / "no-such-folder" / "audit.json", "its folder does not exist"),
                         (tmp_path / "manifest.json", "inside the run folder only as")):
        proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(tmp_path), "--out",
                               str(out)], capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert not out.exists()
