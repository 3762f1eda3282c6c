"""The scoring contract's numeric mode: oneMKL strict CNR switched on before torch computes and verified from
MKL's own report (the run stops otherwise); the process environment set before torch is imported."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from rerank_study.reranker import numerics

NUMERIC_CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1] + "/workflow")
for k in ("MKL_CBWR", "MKL_DYNAMIC", "OMP_DYNAMIC"):
    os.environ.pop(k, None)
from rerank_study.reranker import numerics
import torch
if sys.argv[2] == "compute-first":  # MKL computes in its default mode before the scoring setup
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
try:
    mode = numerics.enforce_cnr()
except numerics.NumericModeError as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(0)
torch.mm(torch.ones(64, 64), torch.ones(64, 64))
print(json.dumps(mode))
"""


@pytest.mark.parametrize("case", ["fresh", "compute-first"])
def test_the_numeric_mode_is_switched_on_and_verified_by_mkl_or_the_run_stops(case):
    """enforce_cnr asks MKL itself; MKL_VERBOSE (MKL's own log of every call) must say CNR:AUTO,STRICT and
    no dynamic thread adjustment. Once MKL has computed in its default mode, the switch is refused and the
    scoring stops with the fix."""
    env = {k: v for k, v in os.environ.items() if k not in numerics.CNR_ENV} | {"MKL_VERBOSE": "1"}
    out = subprocess.run([sys.executable, "-c", NUMERIC_CHILD, str(ROOT), case], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    calls = [line for line in out.stdout.splitlines() if line.startswith("MKL_VERBOSE SGEMM")]
    if case == "fresh":
        assert result["mkl_cnr"] == "AUTO,STRICT" and result["switched_in_process"] is True
        assert result["omp_dynamic"] is False
        assert calls and all("CNR:AUTO,STRICT" in c and "Dyn:0" in c for c in calls), calls
    else:
        assert "NUMERIC MODE" in result["error"] and "MKL_CBWR=AUTO,STRICT" in result["error"]
        assert calls and "CNR:OFF" in calls[0]


def test_configure_process_sets_the_environment_before_torch():
    env: dict = {}
    got = numerics.configure_process(env)
    assert env == {"MKL_CBWR": "AUTO,STRICT", "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
    assert got["env"] == env and got["mmap_threshold_bytes"] in (256 * 1024, None)
    assert numerics.cnr_name(2 | 0x10000) == "AUTO,STRICT" and numerics.cnr_name(1) == "OFF"
    assert numerics.cnr_name(3) == "COMPATIBLE" and numerics.cnr_name(None) == "unknown"
