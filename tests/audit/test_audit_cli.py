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
