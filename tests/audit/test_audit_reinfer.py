"""Check 'reinfer', the audit's optional second stage (--reinfer N): the auditor draws N batches with fresh
randomness, records the seed and the draw, and re-infers exactly those batches with upstream
sentence-transformers in a child process; honest runs pass bit for bit (the smoke run, every batch of the dev
run), a logit forged in a drawn batch fails even by one float32 ULP and with the run's verification record
forged with it; the model folder must be the run's; a child that cannot run fails the check; without --reinfer
the standard-library audit runs and says the stage was not asked for."""

import json
import os
import platform
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import AUDIT, audit_module, read_json
from forged_runs import FIXTURE_CONFIG, copy_run, failures, forge_logit, model_dir, read_rows, run_audit

MAX_LENGTH = yaml.safe_load(FIXTURE_CONFIG.read_text())["ce"]["max_length"]  # where the fixture cuts a pair
SEED = 20240611  # a draw forced by hand (--reinfer-seed, tests only)


def reinfer_args(workdir, n="2", *extra):
    return ("--reinfer", n, "--model-dir", str(model_dir(workdir)), "--reinfer-python", sys.executable,
            *extra)


def forced_draw(rundir, lockdir, n, seed):
    """The batches the audit draws with ``seed`` (its own functions, on the run as the audit reads it)."""
    stage = audit_module("reinfer.stage")
    return stage.draw(stage.run_batches(audit_module("read.run_files").RunFiles(rundir, lockdir)), n, seed)


def batch_of(rows, qid, batch, max_length=MAX_LENGTH):
    """The rows of one batch of pairs.tsv, in the batching rule's order (token length desc, rank asc), the
    length cut at ``max_length`` (the fixture's ce.max_length by default)."""
    return [r["doc_id"] for r in sorted((r for r in rows if r["qid"] == qid and int(r["batch"]) == batch),
                                        key=lambda r: (-min(int(r["total_tokens"]), max_length),
                                                       int(r["r0"])))]


def one_ulp_up(text):
    bits = struct.unpack(">I", struct.pack(">f", float(text)))[0]
    return repr(struct.unpack(">f", struct.pack(">I", bits + 1))[0])


def assert_exactly_the_drawn_batches(rundir, stage):
    rows = read_rows(rundir / "pairs.tsv")
    assert [[b["qid"], b["batch"]] for b in stage["results"]] == stage["drawn"]
    for b in stage["results"]:
        assert b["doc_ids"] == batch_of(rows, b["qid"], b["batch"]) and b["pairs"] == len(b["doc_ids"])
    assert stage["pairs"] == sum(b["pairs"] for b in stage["results"])


def test_without_reinfer_the_standard_library_audit_runs_and_says_the_stage_was_not_asked_for(
        smoke_run, fixture_workdir, tmp_path):
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 0 and "re-inference (--reinfer): not asked for" in proc.stdout, proc.stdout
    check = result["checks"]["reinfer"]
    assert check["checked"] == 0 and check["failures"] == 0 and check["note"].startswith("NOT ASKED FOR")
    assert result["info"]["reinfer"]["asked"] is False and "seconds" not in result["info"]["reinfer"]


def test_the_dags_audit_rule_reinfers_a_fresh_draw_of_config_audit_reinfer_batches(smoke_run):
    stage = read_json(smoke_run / "audit.json")["info"]["reinfer"]
    assert read_json(smoke_run / "audit.json")["ok"] is True
    assert stage["asked"] is True and stage["batches_asked"] == 2 and len(stage["drawn"]) == 2
    assert stage["seed_source"] == "secrets.randbits(64), drawn at audit time"
    assert stage["child"]["mkl_cnr"] == "AUTO,STRICT" and stage["seconds"] > 0
    assert all(b["equal"] == b["pairs"] for b in stage["results"])
    assert_exactly_the_drawn_batches(smoke_run, stage)
    # the child was started before the standard-library checks, on the job the check built itself
    assert stage["child_started"].startswith("before the other checks")


class FakeEarly:
    """An early child that has answered ``job``."""

    def __init__(self, job):
        self.job, self.used = job, False

    def result(self):
        self.used = True
        return {"bits": "early"}, "", 1.0


@pytest.mark.parametrize("same_job", [True, False])
def test_the_early_childs_answer_is_used_only_for_the_very_job_the_check_builds(monkeypatch, same_job):
    stage = audit_module("reinfer.stage")
    started = []
    monkeypatch.setattr(stage, "run_child", lambda req, job: started.append(job) or ({"bits": "now"}, ""))
    req = stage.Request(batches=2, model_dir="m", seed=1)
    job = {"batches": [[["q", "d"]]], "threads": 1}
    req.early = FakeEarly(dict(job) if same_job else {**job, "batches": [[["q", "another d"]]]})
    answer, _, _, early = stage.child_answer(req, job)
    assert early is same_job and req.early.used is same_job
    assert answer == {"bits": "early" if same_job else "now"} and started == ([] if same_job else [job])


def test_two_fresh_draws_each_reinfer_exactly_their_batches_and_pass(smoke_run, fixture_workdir, tmp_path):
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    seeds = []
    for _ in range(2):
        proc, result = run_audit(rundir, lockdir, *reinfer_args(fixture_workdir))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        stage = result["info"]["reinfer"]
        seeds.append(stage["seed"])
        assert stage["drawn"] == [list(b) for b in forced_draw(rundir, lockdir, 2, stage["seed"])]
        assert_exactly_the_drawn_batches(rundir, stage)
        assert result["checks"]["reinfer"]["failures"] == 0 \
            and result["checks"]["reinfer"]["checked"] > stage["pairs"]
    assert seeds[0] != seeds[1]  # fresh randomness at audit time


@pytest.mark.parametrize("forgery", ["+0.13", "one float32 ULP"])
def test_a_logit_forged_in_a_drawn_batch_fails(smoke_run, fixture_workdir, tmp_path, forgery):
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    (q, b), other = forced_draw(rundir, lockdir, 2, SEED)
    doc = batch_of(read_rows(rundir / "pairs.tsv"), q, b)[3]
    honest = next(r["logit"] for r in read_rows(rundir / "pairs.tsv") if (r["qid"], r["doc_id"]) == (q, doc))
    forge_logit(rundir, q, doc, repr(float(honest) + 0.13) if forgery == "+0.13" else one_ulp_up(honest))
    proc, result = run_audit(rundir, lockdir, *reinfer_args(fixture_workdir, "2",
                                                            "--reinfer-seed", str(SEED)))
    assert proc.returncode == 1 and "reinfer" in result["failed_checks"]
    assert "verification" not in result["failed_checks"]  # the run's own record was forged with it
    (fail,) = failures(result, "reinfer")
    assert fail["item"] == (f"qid {q} doc {doc} batch {b} "
                            "(re-inferred)") and fail["found"].startswith(f"{honest} ")
    stage = result["info"]["reinfer"]
    assert stage["seed"] == SEED and stage["seed_source"].startswith("--reinfer-seed: CHOSEN BY HAND")
    assert stage["drawn"] == [[q, b], list(other)]


def test_a_forged_logit_outside_the_drawn_batches_is_not_what_that_draw_checks(smoke_run,
                                                                               fixture_workdir, tmp_path):
    """Only the drawn batches are re-inferred: the auditor's draw is what makes the forger's odds (fresh at
    audit time: unknowable beforehand)."""
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    drawn = forced_draw(rundir, lockdir, 2, SEED)
    rows = read_rows(rundir / "pairs.tsv")
    row = next(r for r in rows if (r["qid"], int(r["batch"])) not in drawn)
    forge_logit(rundir, row["qid"], row["doc_id"], repr(float(row["logit"]) + 0.13))
    proc, result = run_audit(rundir, lockdir, *reinfer_args(fixture_workdir, "2",
                                                            "--reinfer-seed", str(SEED)))
    assert result["checks"]["reinfer"]["failures"] == 0
    assert result["info"]["reinfer"]["drawn"] == [list(x) for x in drawn]


def test_every_batch_of_the_dev_run_is_reinferred_bit_for_bit(dev_run, fixture_workdir, tmp_path):
    rundir, lockdir = copy_run(dev_run, fixture_workdir, tmp_path / "w")
    proc, result = run_audit(rundir, lockdir, *reinfer_args(fixture_workdir, "all", "--reinfer-threads", "2"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stage = result["info"]["reinfer"]
    assert len(stage["drawn"]) == stage["batches_in_run"] == 32 and stage["pairs"] == 400  # 8 queries x 50
    assert_exactly_the_drawn_batches(rundir, stage)
    print(f"every batch of the dev fixture run: {stage['seconds']} s (child {stage['child_seconds']} s)")


def test_the_model_folder_must_hold_exactly_the_runs_model(smoke_run, fixture_workdir, tmp_path):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir(fixture_workdir), folder)
    (folder / "modules.json").write_text("[]\n")  # a file the loader may read that MODEL.json does not list
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    args = list(reinfer_args(fixture_workdir))
    args[args.index("--model-dir") + 1] = str(folder)
    proc, result = run_audit(rundir, lockdir, *args)
    assert proc.returncode == 1 and result["failed_checks"] == ["reinfer"]
    (fail,) = failures(result, "reinfer")
    assert fail["file"].endswith("modules.json") and fail["found"] == "not listed"
    assert result["info"]["reinfer"]["result"].startswith("not re-inferred")


def test_a_reinference_process_that_cannot_run_fails_the_check(smoke_run, fixture_workdir, tmp_path):
    """A python interpreter without the child's libraries (an empty virtual environment)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "empty")], check=True)
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    args = list(reinfer_args(fixture_workdir))
    args[args.index("--reinfer-python") + 1] = str(tmp_path / "empty" / "bin" / "python")
    proc, result = run_audit(rundir, lockdir, *args)
    assert proc.returncode == 1 and result["failed_checks"] == ["reinfer"]
    (fail,) = failures(result, "reinfer")
    assert fail["item"] == "the re-inference process" and "exit 1" in fail["found"] and "No module named" in \
        fail["found"]


def test_the_reinference_records_the_interpreter_and_every_model_file(smoke_run, fixture_workdir, tmp_path):
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    proc, result = run_audit(rundir, lockdir, *reinfer_args(fixture_workdir))
    assert proc.returncode == 0, proc.stdout[-2000:]
    stage = result["info"]["reinfer"]
    assert stage["child_process"] == {"python": os.path.realpath(sys.executable),
                                      "version": platform.python_version()}
    folder = fixture_workdir / "resources" / "models" / "standin-seed110"
    meta = json.loads((folder / "MODEL.json").read_text())
    assert stage["model_files_sha256"] == meta["files"]


@pytest.mark.parametrize("args, message", [(["--reinfer", "2"], "--reinfer needs --model-dir"),
                                           (["--reinfer", "0", "--model-dir", "m"], "a number of batches"),
                                           (["--reinfer", "some", "--model-dir", "m"],
                                            "a number of batches")])
def test_reinfer_arguments_are_refused_when_incomplete(tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(tmp_path), *args],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def default_signals() -> None:
    """The audit's signals at their defaults, as in a terminal (a test runner's worker may ignore SIGINT,
    and an ignored signal is inherited: the audit leaves it ignored)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
def test_an_audit_ended_by_a_signal_leaves_no_child_running_and_a_failed_verdict(smoke_run, fixture_workdir,
                                                                                 tmp_path, sig):
    """The early child runs beside the checks: an audit stopped by a signal stops it too (SIGKILL: the child
    dies with its parent), and the verdict is a failed one (written first, before any check), never an older
    audit.json."""
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    out = tmp_path / "audit.json"
    out.write_text(json.dumps({"ok": True}))
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir), "--lockdir",
                             str(lockdir), "--configfile", str(FIXTURE_CONFIG), "--out", str(out),
                             *reinfer_args(fixture_workdir, "all")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=default_signals)
    deadline, child = time.monotonic() + 60, []
    while not child and time.monotonic() < deadline and proc.poll() is None:
        child = children_of(proc.pid)
        time.sleep(0.05)
    assert child, "the early re-inference child was never seen"
    proc.send_signal(sig)
    assert proc.wait(timeout=30) != 0
    deadline = time.monotonic() + 10
    while any(alive(c) for c in child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(c) for c in child), "a re-inference child outlived the audit"
    assert json.loads(out.read_text())["ok"] is False


def test_the_child_exits_at_once_when_the_audit_that_started_it_is_gone():
    """reinfer/child.py is given the audit's pid: when that is not its parent (the audit died before the
    child's first line), it exits before it reads its job or imports torch."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-I", "-B", str(AUDIT / "reinfer" / "child.py"), "1"], input="",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and time.monotonic() - t0 < 5
    assert "is not this process's parent" in proc.stderr and "give the interpreter itself" in proc.stderr


@pytest.mark.parametrize("edit", ["config.json changed, MODEL.json updated", "a listed file the pins lack",
                                  "a name outside the folder", "another relevance logit"])
def test_the_model_folder_must_be_the_lock_folders_pinned_model(smoke_run, fixture_workdir, tmp_path, edit):
    """The folder re-inferred with must hold exactly the files the lock folder pins (not only what its own
    MODEL.json lists): a folder changed coherently with its MODEL.json would otherwise re-infer (and pass) a
    run made with another model."""
    import hashlib
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir(fixture_workdir), folder)
    meta = json.loads((folder / "MODEL.json").read_text())
    if edit.startswith("config.json"):
        config = json.loads((folder / "config.json").read_text())
        config["layer_norm_eps"] = 1e-3
        (folder / "config.json").write_text(json.dumps(config))
        meta["files"]["config.json"] = hashlib.sha256((folder / "config.json").read_bytes()).hexdigest()
    elif edit == "another relevance logit":  # the study declares none: MODEL.json cannot choose one
        meta["label_index"] = 5
    elif edit.startswith("a listed file"):
        (folder / "modules.json").write_text("[]\n")
        meta["files"]["modules.json"] = hashlib.sha256(b"[]\n").hexdigest()
    else:
        (tmp_path / "payload").write_text("x")
        meta["files"]["../payload"] = hashlib.sha256(b"x").hexdigest()
    (folder / "MODEL.json").write_text(json.dumps(meta))
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    args = list(reinfer_args(fixture_workdir))
    args[args.index("--model-dir") + 1] = str(folder)
    proc, result = run_audit(rundir, lockdir, *args)
    assert proc.returncode == 1 and result["failed_checks"] == ["reinfer"], proc.stdout[-2000:]
    assert result["info"]["reinfer"]["result"].startswith("not re-inferred")
    items = [f["item"] for f in failures(result, "reinfer")]
    assert any(word in i for i in items for word in ("the lock folder's model pins", "file name",
                                                      "label_index")), items
