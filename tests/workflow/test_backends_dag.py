"""A derived backend (ce.backend: onnx-int8, docs/backends.md) end to end on the fixture, as a user runs it:

* ``repin=backend`` makes the stand-in's derived file in another process and writes the very pin committed in
  lockfiles/derived_pins.json (same sha256, same recipe); a second ``repin=backend`` is refused;
* the smoke run with the backend's config file scores, re-infers its own sample, passes its audit (whose
  own re-inference runs the derived file with ONNX Runtime in its child) and writes the retention table
  against the torch smoke run of the same fixture;
* bad input stops before anything is scored: a derived file that is not its pin, a recipe whose runtime
  version is not the installed one, a backend without a pin; the retention refuses to start without the torch
  run; the audit refuses a backend run re-inferred without its derived file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import DATA, FIXTURE, ROOT, run_snakemake, world_lock

pytestmark = pytest.mark.slow  # runs snakemake (the two-study test too, which uses no DAG fixture)

BACKENDS = ROOT / "config" / "backends"
RUN = "smoke-standin-onnx-int8"
STANDIN_IDENTITY = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())["standin"][
    "identity_sha256"]
COMMITTED = json.loads((ROOT / "lockfiles" / "derived_pins.json").read_text())["backends"]


def backend_run(wd: Path, backend: str, *args: str, check: bool = True, **config):
    """Snakemake on the fixture with the backend's committed config file over the fixture's."""
    return run_snakemake(wd, "--configfile", str(DATA / "fixture_config.yaml"),
                         str(BACKENDS / f"{backend}.yaml"), *args,
                         config={"data_mirror": str(FIXTURE), "smoke": "true", **config}, check=check,
                         fixture=False)


def copy_world(src: Path, dest: Path, subs=("lockfiles", "resources", "results")) -> Path:
    for sub in subs:
        shutil.copytree(src / sub, dest / sub, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def world(smoke_run, fixture_workdir, tmp_path_factory) -> Path:
    """A copy of the fixture's work folder (the torch smoke run done); the backend pinned, then run."""
    with world_lock(fixture_workdir):  # no fixture run being made in it meanwhile
        wd = copy_world(fixture_workdir, tmp_path_factory.mktemp("backend"))
    backend_run(wd, "onnx-int8", repin="backend")
    backend_run(wd, "onnx-int8")
    return wd


def test_repin_backend_writes_the_committed_pin_and_never_overwrites_it(world):
    pins = json.loads((world / "lockfiles" / "derived_pins.json").read_text())["backends"]
    assert pins["onnx-int8"][STANDIN_IDENTITY] == COMMITTED["onnx-int8"][STANDIN_IDENTITY]
    again = backend_run(world, "onnx-int8", repin="backend", check=False)
    assert again.returncode != 0 and "a pin is never overwritten" in again.stderr + again.stdout


def test_the_backend_run_passes_its_audit_with_the_auditors_own_onnx_runtime_reinference(world):
    rundir = world / "results" / RUN
    audit = json.loads((rundir / "audit.json").read_text())
    assert audit["ok"] is True, audit.get("failed_checks")
    pin = COMMITTED["onnx-int8"][STANDIN_IDENTITY]
    child = audit["info"]["reinfer"]["child"]
    assert child["derived"]["sha256"] == pin["sha256"] and audit["info"]["reinfer"]["pairs"] > 0
    manifest = json.loads((rundir / "manifest.json").read_text())
    assert manifest["settings"]["backend"] == "onnx-int8"
    labels = {line.split("\t")[-1] for line in (rundir / "pairs.tsv").read_text().splitlines()[1:]}
    assert labels == {f"{manifest['model_identity']} onnx-int8:sha256:{pin['sha256']} "
                      f"weights-sha256:{manifest['model_weights_sha256']}"}
    assert json.loads((rundir / "verification.json").read_text())["all_equal"] is True


def test_the_retention_table_compares_the_same_pairs_scored_by_torch_and_by_int8(world):
    rec = json.loads((world / "results" / "retention" / RUN / "retention.json").read_text())
    assert rec["runs"] == ["smoke-standin", RUN] and rec["backend"] == "onnx-int8"
    torch_logits = {tuple(r.split("\t")[:2]): float(r.split("\t")[3])
                    for r in (world / "results" / "smoke-standin" / "pairs.tsv").read_text().splitlines()[1:]}
    int8_logits = {tuple(r.split("\t")[:2]): float(r.split("\t")[3])
                   for r in (world / "results" / RUN / "pairs.tsv").read_text().splitlines()[1:]}
    assert set(torch_logits) == set(int8_logits) and rec["agreement"]["pairs"] == len(torch_logits)
    largest = max(abs(int8_logits[k] - torch_logits[k]) for k in torch_logits)
    assert rec["agreement"]["max_abs_delta_logit"] == largest and 0 < largest < 0.05  # quantised, near
    torch_summary = json.loads((world / "results" / "smoke-standin" / "summary.json").read_text())
    primary = torch_summary["comparisons"][torch_summary["primary"]]
    assert rec["conclusion"]["reference"]["primary_mean"] == primary["mean"]
    assert rec["conclusion"]["reference"]["grouped_interval"] == primary["grouped_interval"]
    assert "| conclusion retained |" in (world / "results" / "retention" / RUN / "retention.md").read_text()


def _stops(proc, message: str) -> None:
    out = proc.stdout + proc.stderr
    workdir = Path(proc.args[proc.args.index("--directory") + 1])
    logs = "".join(p.read_text(errors="replace") for p in workdir.rglob("*.log"))
    assert proc.returncode != 0 and (message in out or message in logs), out[-3000:]


def test_a_derived_file_that_is_not_its_pin_stops_before_scoring(world, tmp_path):
    wd = copy_world(world, tmp_path)
    derived = wd / "resources" / "models" / "standin-seed110-onnx-int8" / "model.onnx"
    data = bytearray(derived.read_bytes())
    data[-1] ^= 1
    derived.write_bytes(bytes(data))
    shard = wd / "results" / RUN / "shards" / "score-of-1" / "0.tsv"
    before = shard.read_bytes()
    _stops(backend_run(wd, "onnx-int8", "--forcerun", "score_shard", check=False),
           "DERIVED FILE DIFFERS FROM ITS PIN")
    assert not shard.exists() or shard.read_bytes() == before


def test_a_recipe_whose_runtime_version_is_not_installed_stops_before_scoring(world, tmp_path):
    wd = copy_world(world, tmp_path)
    path = wd / "lockfiles" / "derived_pins.json"
    pins = json.loads(path.read_text())
    pins["backends"]["onnx-int8"][STANDIN_IDENTITY]["recipe"]["versions"]["onnxruntime"] = "1.0.0"
    path.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
    _stops(backend_run(wd, "onnx-int8", "--forcerun", "backend_model", check=False),
           "RUNTIME VERSION DIFFERS FROM THE RECIPE")


def test_a_backend_without_a_pin_stops_before_scoring(world, tmp_path):
    wd = copy_world(world, tmp_path)
    proc = backend_run(wd, "onnx", check=False)
    _stops(proc, "NO PIN for backend 'onnx'")
    assert not (wd / "results" / "smoke-standin-onnx" / "pairs.tsv").exists()


def test_the_retention_refuses_to_start_without_the_torch_run(world, tmp_path):
    wd = copy_world(world, tmp_path, subs=("lockfiles", "resources"))
    proc = backend_run(wd, "onnx-int8", check=False)
    _stops(proc, "RETENTION of backend 'onnx-int8'")
    assert not (wd / "results").exists() or not any((wd / "results").iterdir())
    # the run's audit alone needs no torch run: the DAG up to it is built (a dry run)
    audit_only = run_snakemake(wd, "--configfile", str(DATA / "fixture_config.yaml"),
                               str(BACKENDS / "onnx-int8.yaml"), "-n",
                               config={"data_mirror": str(FIXTURE), "smoke": "true"}, fixture=False,
                               targets=(str(wd / "results" / RUN / "audit.json"),))
    assert "audit" in audit_only.stdout


def test_the_audit_of_a_backend_run_without_its_derived_file_fails(world, tmp_path):
    rundir = world / "results" / RUN
    out = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts" / "audit"), str(rundir),
                          "--lockdir", str(world / "lockfiles"), "--configfile",
                          str(DATA / "fixture_config.yaml"), "--configfile", str(BACKENDS / "onnx-int8.yaml"),
                          "--reinfer", "1", "--model-dir",
                          str(world / "resources" / "models" / "standin-seed110"), "--reinfer-python",
                          sys.executable, "--out", str(tmp_path / "audit.json")], capture_output=True,
                         text=True)
    assert out.returncode != 0
    verdict = json.loads((tmp_path / "audit.json").read_text())
    assert verdict["ok"] is False and "reinfer" in verdict["failed_checks"]
    assert "--derived-file" in out.stdout + out.stderr


def test_a_torch_run_in_the_backends_folder_is_refused_by_the_retention(world, tmp_path):
    """The red team's relabelling: a torch run named as the backend's run, then the retention alone."""
    wd = copy_world(world, tmp_path)
    shutil.rmtree(wd / "results" / RUN)
    shutil.rmtree(wd / "results" / "retention")
    run_snakemake(wd, config={"smoke": "true", "run_name": RUN})  # a torch run, its audit passes
    proc = backend_run(wd, "onnx-int8", "--rerun-triggers", "mtime", check=False)
    _stops(proc, "NOT THE TORCH AND THE onnx-int8 RUN OF ONE MODEL")
    assert not (wd / "results" / "retention" / RUN / "retention.json").exists()


def test_a_backend_on_the_command_line_is_refused_at_start(world, tmp_path):
    wd = copy_world(world, tmp_path, subs=("lockfiles",))
    proc = run_snakemake(wd, "-n", config={"smoke": "true", "ce": "{backend: onnx-int8}"}, check=False)
    _stops(proc, "a backend is set by its committed config file")


def test_the_audit_refuses_a_pin_filed_under_another_backend(world, tmp_path):
    """The red team's slot swap: the fp32 pin filed under onnx-int8 (and the fp32 file in its place)."""
    wd = copy_world(world, tmp_path, subs=("lockfiles",))
    path = wd / "lockfiles" / "derived_pins.json"
    pins = json.loads(path.read_text())
    pins["backends"]["onnx-int8"][STANDIN_IDENTITY] = COMMITTED["onnx"][STANDIN_IDENTITY]
    path.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts" / "audit"),
                          str(world / "results" / RUN), "--lockdir", str(wd / "lockfiles"), "--configfile",
                          str(DATA / "fixture_config.yaml"), "--configfile", str(BACKENDS / "onnx-int8.yaml"),
                          "--out", str(tmp_path / "audit.json")], capture_output=True, text=True)
    assert out.returncode != 0 and "a pin must be of its slot" in out.stdout + out.stderr


def test_the_audit_fails_a_pin_whose_sha256_is_not_its_recipes_file(world, tmp_path):
    """The red team's unbound pin: the onnx-int8 pin keeps its int8 recipe but takes the fp32 file's sha256
    and size, and the fp32 file is put in the int8 file's place. The pipeline cannot tell (the file is its
    pin); the audit's child makes the int8 file again from the verified model by the recipe and fails the
    run."""
    sys.path.insert(0, str(ROOT / "workflow"))
    from rerank_study.reranker import backends

    wd = copy_world(world, tmp_path)
    path = wd / "lockfiles" / "derived_pins.json"
    pins = json.loads(path.read_text())
    fp32 = COMMITTED["onnx"][STANDIN_IDENTITY]
    pins["backends"]["onnx-int8"][STANDIN_IDENTITY].update(sha256=fp32["sha256"], bytes=fp32["bytes"])
    path.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
    model = wd / "resources" / "models" / "standin-seed110"
    arch = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())["cross_encoder"]["architecture"]
    backends.derive(model, "onnx", arch, model.parent / "standin-seed110-onnx-int8" / backends.FILE)
    for sub in (f"results/{RUN}", "results/retention"):
        shutil.rmtree(wd / sub)
    _stops(backend_run(wd, "onnx-int8", check=False), "AUDIT FAILED: reinfer\n")
    failed = (wd / "results" / RUN / "logs" / "audit.log").read_text().split("FAILED CHECKS:")[1]
    assert "the file the child made again from the verified model by the recipe" in failed
    assert failed.count("\n  [") == 1  # nothing else failed: the pipeline took the file (it is its pin)


def test_a_backend_study_beside_its_torch_study_has_its_retention_in_the_cross_study_table(tmp_path):
    """Two studies of one invocation: the fixture study and its twin scored by onnx-int8 (a study file that
    sets ce.backend, its own lock folder with the committed pin). The cross-study table names each backend;
    its retention section holds the int8 study against the torch study, equal to an independent reading of
    the two runs' per-query tables."""
    from conftest import make_lockdir, studies_arg, write_yaml

    from rerank_study.settings.config import load_config

    base = load_config(ROOT / "config" / "config.yaml")
    sizes = yaml.safe_load((DATA / "fixture_config.yaml").read_text())  # the fixture's splits, B, sizes, ce
    files = []
    for name, extra in (("scifact-fixture", {}),
                        ("scifact-fixture-int8", {"ce": {**sizes["ce"], "backend": "onnx-int8"}})):
        lock = make_lockdir(tmp_path / f"{name}-lock")
        pins = json.loads((lock / "derived_pins.json").read_text())
        pins["backends"] = {"onnx-int8": {STANDIN_IDENTITY: COMMITTED["onnx-int8"][STANDIN_IDENTITY]}}
        (lock / "derived_pins.json").write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
        files.append(write_yaml(tmp_path / f"{name}.yaml", {
            "study": {**base["study"], "name": name}, "lockdir": str(lock), "data_mirror": str(FIXTURE),
            "scorer": "stand-in", **sizes, **extra}))
    run_snakemake(tmp_path, config={"studies": studies_arg(*files), "smoke": "true"}, fixture=False)
    cross = tmp_path / "results" / "cross-study" / "scifact-fixture+scifact-fixture-int8"
    import pandas as pd

    table = pd.read_csv(cross / "cross_study.tsv", sep="\t")
    assert table["backend"].tolist() == ["torch", "onnx-int8"]
    kept = pd.read_csv(cross / "cross_study_retention.tsv", sep="\t")
    assert kept[["study", "backend", "torch_study"]].values.tolist() == [
        ["scifact-fixture-int8", "onnx-int8", "scifact-fixture"]]
    runs = [tmp_path / "results" / s / r for s, r in (("scifact-fixture", "smoke-standin"),
                                                      ("scifact-fixture-int8", RUN))]
    means = []
    for run in runs:  # the primary's per-query delta, read here from each run's own table
        s = json.loads((run / "summary.json").read_text())
        a, b = (s["comparisons"][s["primary"]][k] for k in ("a", "b"))
        pq = pd.read_csv(run / "per_query.tsv", sep="\t", dtype={"qid": str})
        means.append((pq[f"{a}_{s['metric']}"] - pq[f"{b}_{s['metric']}"]).mean())
    row = kept.iloc[0]
    assert row["torch_primary_mean"] == pytest.approx(means[0], abs=1e-12)
    assert row["primary_mean"] == pytest.approx(means[1], abs=1e-12)
    assert row["delta_difference"] == pytest.approx(means[1] - means[0], abs=1e-12)
    assert "Conclusion retention" in (cross / "cross_study.md").read_text()


def test_a_backend_on_a_model_it_cannot_export_stops_at_start(world, tmp_path):
    """The study's pinned cross-encoder is another architecture than the export supports: the invocation
    stops before any job (nothing is made, pinned or scored)."""
    wd = copy_world(world, tmp_path, subs=("lockfiles",))
    path = wd / "lockfiles" / "model_pins.json"
    pins = json.loads(path.read_text())
    pins["cross_encoder"]["architecture"]["architectures"] = ["RobertaForSequenceClassification"]
    path.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
    proc = backend_run(wd, "onnx-int8", check=False)
    _stops(proc, "CANNOT EXPORT architecture ['RobertaForSequenceClassification']")
    assert not (wd / "results").exists() and not (wd / "resources").exists()
