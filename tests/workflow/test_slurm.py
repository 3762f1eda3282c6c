"""The smoke DAG through a REAL single-node SLURM (scripts/local_slurm.sh: Debian's slurm-wlm + munge,
started and stopped by this module) with Snakemake's SLURM executor and profiles/slurm, in 2 scoring
shards: every deterministic artefact of the manifest has the same sha256 as the local run (--cores 2,
one shard).

Skips, saying why, where this machine cannot host the cluster: not root, slurm/munge not installable
(no apt), the SLURM ports taken or another local cluster up (local_slurm.sh exits 75 then). Cost on
the reference machine kind (2 cores): ~1 min to install the packages once, then the DAG's cluster jobs
(~12-20 s of SLURM overhead each, partly in parallel; the local bookkeeping rules run beside snakemake)."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import DATA, ROOT, read_json, run_snakemake

pytestmark = pytest.mark.slow  # runs snakemake

SCRIPT = ROOT / "scripts" / "local_slurm.sh"


@pytest.fixture(scope="module")
def local_slurm(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the local SLURM needs root (apt-get, munged, slurmd): run the suite as root "
                    "to include it")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("no slurm-wlm and no apt-get to install it")
    # munged runs as user munge: its state folder's parents must be traversable (pytest's tmp folders are
    # 0700)
    state = Path(tempfile.mkdtemp(prefix="rerank-study-slurm-", dir="/tmp"))
    state.chmod(0o755)
    env = dict(os.environ, LOCAL_SLURM_STATE=str(state))
    up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, env=env, timeout=900)
    if up.returncode == 75:
        pytest.skip(f"this machine cannot host the local SLURM: {up.stderr.strip()[-500:]}")
    try:
        assert up.returncode == 0, f"local_slurm.sh up failed ({up.returncode}):\n{up.stderr[-3000:]}"
        yield env
    finally:
        down = subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, text=True, env=env,
                              timeout=300)
        shutil.rmtree(state, ignore_errors=True)
        assert down.returncode == 0, down.stderr[-2000:]


def test_smoke_dag_through_slurm_in_two_shards_is_byte_identical_to_the_local_run(local_slurm, smoke_run,
                                                                                    fixture_workdir,
                                                                                  tmp_path):
    wd = tmp_path / "slurm"
    shutil.copytree(fixture_workdir / "lockfiles", wd / "lockfiles")
    shards = tmp_path / "shards.yaml"
    shards.write_text("ce:\n  shards: 2\n")
    proc = run_snakemake(wd, "--profile", str(ROOT / "profiles" / "slurm"), "--max-threads", "2",
                         "--configfile", str(DATA / "fixture_config.yaml"), str(shards),
                         config={"smoke": "true"}, check=False)
    # the transcript, kept for reading
    (tmp_path / "snakemake-slurm.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert "submitted with SLURM jobid" in proc.stderr  # the jobs really went through sbatch
    rundir = wd / "results" / "smoke-standin"
    logs = list((wd / ".snakemake" / "slurm_logs").rglob("*.log"))
    assert any("score_shard" in str(p) for p in logs), logs  # each shard was a SLURM job with its own log
    submitted = {part[len("rule_"):] for p in logs for part in p.parts if part.startswith("rule_")}
    assert {"score_shard", "verify_scores", "analyse", "audit"} <= submitted, submitted
    assert not submitted & {"fetch_data", "splits", "score", "manifest"}, submitted  # local rules stay local
    assert sorted(p.name for p in (rundir / "logs" / "score_shard").glob("*.log")) == ["0-of-2.log",
                                                                                       "1-of-2.log"]
    local = {a["key"]: a for a in read_json(smoke_run / "manifest.json")["artefacts"]}
    remote = {a["key"]: a for a in read_json(rundir / "manifest.json")["artefacts"]}
    assert set(local) == set(remote)
    deterministic = [k for k, a in local.items() if a["deterministic"]]
    assert "pairs" in deterministic and len(deterministic) > 10
    assert [k for k in deterministic if remote[k]["sha256"] != local[k]["sha256"]] == []
    assert (rundir / "pairs.tsv").read_bytes() == (smoke_run / "pairs.tsv").read_bytes()
