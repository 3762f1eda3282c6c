"""Check 'reinfer': the AUDITOR'S OWN SAMPLE, an optional second stage (``--reinfer N``). Signature: see
checks.provenance; what was asked comes from the command line (``configure``, one audit per process).

The run's own verification record (rule verify_scores) re-infers batches the run's seed names: a score forged
outside that sample, or forged together with the record, passes it. Here the auditor draws N of the run's
(qid, batch) batches with FRESH randomness at audit time (``secrets``; the seed and the drawn batches are
recorded in audit.json ``info.reinfer``), so nobody can know beforehand which pairs will be checked, and
re-infers each with UPSTREAM ``sentence_transformers.CrossEncoder.predict`` - not the project's scoring code -
on the batch's recorded composition: the rows of pairs.tsv with that qid and batch number, in the batching
rule's order (truncated token length descending, candidate rank ascending; predict sorts them by characters as
the scoring does), as ONE batch (``batch_size`` = its size), raw logits (identity activation), in oneMKL's
strict CNR mode. Any difference from pairs.tsv fails: the float32 logit must be the value in pairs.tsv, bit
for bit. For speed the child starts before the other checks (``start_early``, same
draw); its answer is used only if the job built after every other check is that job (else a new child).

The texts are the run's verified inputs (queries.jsonl; ``(title + " " + text).strip()`` of corpus.jsonl),
hashed against the manifest (held to the pins by check 'lockfile_pins'). The model folder (``--model-dir``)
must hold exactly the files its MODEL.json lists, with their sha256, its weights and identity the manifest's,
those files exactly the ones the lock folder pins, and its config.json the lock's architecture block.

torch cannot be imported by the audit (python -I -S): a child process, ``child.py`` of this folder, runs
the inference: ``python -I -B child.py`` with the environment's python (``--reinfer-python``), the audit's
environment plus its own settings (the numeric mode, the offline switches). It reads the job (the drawn
batches' texts, each verified model file's sha256) on stdin, loads the model from the verified folder and
writes the logits on stdout, with the interpreter it ran as and the sha256 of every model file it loaded
(recorded in ``info.reinfer``); none outlives the audit (``stop_children``). The bits are this CPU kind's:
re-infer on the machine kind that made the run (check 'reference' holds a run to a committed reference within
a measured tolerance instead). A derived backend's run (docs/backends.md): the child runs ``--derived-file``
(the lock folder's pin) with ONNX Runtime and the pinned session, and makes that file AGAIN from the verified
model by the recipe, coded a second time in the child (``child.rederive``): its sha256 must be the pin's.
"""

from __future__ import annotations

import io
import json
import os
import random
import secrets
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from anchor import backend, model_config
from read.readers import plain_number, read_json, rows_by_query, sha256_of, text_of

CHECK = "reinfer"
CHILD = Path(__file__).resolve().parent / "child.py"
# oneMKL strict conditional numerical reproducibility, set before the child's first matrix product
CNR_ENV = {"MKL_CBWR": "AUTO,STRICT", "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


class Request:
    """What the auditor asked for: ``batches`` None (the stage was not asked for), ``"all"`` or N; ``record``
    is what the stage did (audit.json ``info.reinfer``)."""

    def __init__(self, batches=None, model_dir=None, seed=None, python=None, threads=1, derived_file=None):
        self.batches, self.model_dir, self.seed = batches, model_dir, seed
        self.derived_file = derived_file  # a derived backend's file (--derived-file), checked against its pin
        self.python, self.threads = python or sys.executable, threads
        self.record = {"asked": batches is not None}
        # the draw's seed, drawn once: fresh randomness unless chosen by hand
        self.draw_seed = seed if seed is not None else secrets.randbits(64)
        self.early = None  # the child started before the other checks (start_early), if it was


REQUEST = Request()


def configure(**kwargs) -> Request:
    """This audit's request (from __main__'s arguments)."""
    global REQUEST
    REQUEST = Request(**kwargs)
    return REQUEST


def run_batches(run) -> list[tuple[str, int]]:
    """Every (qid, batch) of pairs.tsv: queries in the run's order, batches ascending."""
    order = {q: i for i, q in enumerate(run.analysed)}
    found = {(r["qid"], int(r["batch"])) for r in run.pair_rows}
    return sorted(found, key=lambda qb: (order.get(qb[0], len(order)), qb[0], qb[1]))


def draw(batches: list, k, seed: int) -> list:
    """k batches drawn without replacement by ``random.Random(seed)``; every batch (in run order) when k is
    "all" or at least their number."""
    if k == "all" or k >= len(batches):
        return list(batches)
    return random.Random(seed).sample(batches, k)


def batch_rows(run, drawn, max_length: int) -> dict:
    """Each drawn batch's rows of pairs.tsv, in the batching rule's order."""
    by_q = rows_by_query(run.pair_rows)
    return {(q, b): sorted((r for r in by_q.get(q, []) if int(r["batch"]) == b),
                           key=lambda r: (-min(int(r["total_tokens"]), max_length), int(r["r0"])))
            for q, b in drawn}


def read_texts(run, au, rows: dict):
    """(query texts, document texts) the drawn batches need, from the run's inputs hashed against the
    manifest; None when an input is not the one the manifest lists."""
    ok = True
    for key in ("queries", "corpus"):
        path, listed = run.path(key), run.art[key]["sha256"]
        ok &= au.check(CHECK, sha256_of(path) == listed, str(path), f"{key} sha256 (the text re-inferred)",
                       listed, sha256_of(path))
    if not ok:
        return None
    qids = {q for q, _ in rows}
    docs = {r["doc_id"] for batch in rows.values() for r in batch}
    queries, corpus = {}, {}
    for key, wanted, out in (("queries", qids, queries), ("corpus", docs, corpus)):
        with io.StringIO(text_of(run.path(key))) as fh:
            for line in fh:
                rec = json.loads(line) if line.strip() else {}
                if rec.get("_id") in wanted:
                    out[rec["_id"]] = (rec["text"] if key == "queries"
                                       else (rec.get("title", "") + " " + rec.get("text", "")).strip())
    missing = (qids - set(queries)) | (docs - set(corpus))
    return None if not au.check(CHECK, not missing, str(run.path("corpus")), "texts of the drawn pairs",
                                "every query and document found", sorted(missing)[:5]) else (queries, corpus)


def verify_model_dir(run, want, au, model_dir: Path):
    """MODEL.json of the folder, when the folder holds exactly its listed files with their sha256 and names
    the run's model (weights and identity; for the pinned model also the lock folder's pins); else None."""
    meta_path = model_dir / "MODEL.json"
    meta = read_json(meta_path)
    listed, ok = meta["files"], True
    for name in sorted(listed):  # a name inside the folder: never absolute, never through '..'
        ok &= au.check(CHECK, inside(name), str(meta_path), f"file name {name!r}",
                       "a relative path inside the model folder", name)
    if not ok:
        return None
    present = sorted(p.relative_to(model_dir).as_posix() for p in model_dir.rglob("*") if p.is_file())
    for name in present:
        ok &= au.check(CHECK, name == "MODEL.json" or name in listed, str(model_dir / name), "a file of the "
                       "model folder", "a file MODEL.json lists", "not listed")
    for name, sha in sorted(listed.items()):
        found = sha256_of(model_dir / name) if (model_dir / name).is_file() else "missing"
        ok &= au.check(CHECK, found == sha, str(model_dir / name), "model file sha256", sha, found)
    weights = run.manifest.get("model_weights_sha256")
    ok &= au.check(CHECK, listed.get("model.safetensors") == weights, str(meta_path),
                   "weights (the run's manifest)", weights, listed.get("model.safetensors"))
    ok &= au.check(CHECK, meta.get("identity") == run.manifest.get("model_identity"), str(meta_path),
                   "model identity (the run's manifest)", run.manifest.get("model_identity"),
                   meta.get("identity"))
    index = want.anchor.config.get("study", {}).get("label_index") if run.scorer == "pinned" else None
    ok &= au.check(CHECK, meta.get("label_index") == index, str(meta_path), "label_index (the study's "
                   "relevance logit, study.label_index of the anchor)", index, meta.get("label_index"))
    pins = locked_model_files(run, want)
    for name in sorted(set(pins) | set(listed)):  # exactly the pinned files: none more, none other
        ok &= au.check(CHECK, listed.get(name) == pins.get(name), str(meta_path),
                       f"{name} (the lock folder's model pins)", pins.get(name, "not pinned"),
                       listed.get(name, "not listed"))
    return meta if ok and model_config.architecture_ok(au, CHECK, model_dir, want) else None


def inside(name: str) -> bool:
    """A relative path that stays inside its folder (no absolute path, no '..', no empty part)."""
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def locked_model_files(run, want) -> dict:
    """name -> sha256 of every file of the run's model as the lock folder pins it: the pinned cross-encoder's
    files, or every built file of the STAND-IN (model_pins.json 'standin')."""
    pins = want.anchor.lock("model_pins.json")
    if run.scorer == "pinned":
        return {n: p["sha256"] for n, p in pins["cross_encoder"]["files"].items() if not n.startswith("_")}
    return dict((pins.get("standin") or {}).get("files") or {})


RUNNING: list = []  # every child process started, so that none outlives the audit (stop_children)


def run_child(req: Request, job: dict) -> tuple[dict | None, str]:
    """The child's answer (None when it failed) and its stderr's tail."""
    env = {**os.environ, **CNR_ENV, **OFFLINE_ENV}
    argv = [str(req.python), "-I", "-B", str(CHILD), str(os.getpid())]  # the audit's pid: see child.py
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    except OSError as exc:
        return None, f"cannot start {req.python}: {exc}"
    RUNNING.append(proc)
    stdout, stderr = proc.communicate(json.dumps(job))
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return None, f"exit {proc.returncode}: {stderr[-2000:]}"
    return json.loads(lines[-1]), stderr[-2000:]


def stop_children() -> None:
    """Kill and reap every child still running (the audit ends: normally, by an error or by a signal)."""
    for proc in RUNNING:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def float32_value(bits_hex: str) -> float:
    """The float32 given by its bits (big-endian hex)."""
    return struct.unpack(">f", bytes.fromhex(bits_hex))[0]


def compare(run, au, rows: dict, answer: dict) -> list[dict]:
    """Every re-inferred logit against pairs.tsv, bit for bit; a summary per batch."""
    f, summary = str(run.path("pairs")), []
    for (q, b), batch, bits in zip(rows, rows.values(), answer["bits"]):
        au.check(CHECK, len(bits) == len(batch), f, f"qid {q} batch {b}", f"{len(batch)} logits",
                 f"{len(bits)}")
        equal = 0
        for r, x in zip(batch, bits):
            value = float32_value(x)
            equal += au.check(CHECK, plain_number(r["logit"]) == value, f, f"qid {q} doc {r['doc_id']} "
                              f"batch {b} (re-inferred)", r["logit"], f"{value!r} (float32 0x{x})")
        summary.append({"qid": q, "batch": b, "pairs": len(batch), "equal": equal,
                        # the composition re-inferred, in the order fed
                        "doc_ids": [r["doc_id"] for r in batch]})
    return summary


def check_reinfer(run, want, au) -> None:
    try:
        reinfer_stage(run, want, au, REQUEST)
    finally:  # an early child the stage did not use is waited for: none is left running
        if REQUEST.early is not None:
            REQUEST.early.thread.join()


def reinfer_stage(run, want, au, req: Request) -> None:
    """What was asked: nothing (a run-file reranker, or no --reinfer), a refusal (an opening without
    --reinfer all), or the stage."""
    if run.reranker_kind == "run":  # the anchor's study.reranker_kind: a pinned run file, nothing to re-infer
        req.record = {"asked": False,
                      "note": "a run-file reranker: nothing was inferred, nothing to re-infer"}
        au.check(CHECK, req.batches is None, str(run.manifest_path), "--reinfer",
                 "not given: a run-file reranker "
                 "infers nothing (check 'reranker_run' re-derives its scores from the pinned run file)",
                 req.batches)
        return
    if opening_needs_every_batch(run, want, au, req):
        return
    if req.batches is None:
        req.record = {"asked": False, "note": "not asked for (no --reinfer N)"}
        au.note(CHECK, "NOT ASKED FOR: no --reinfer N was given, so nothing was re-inferred by the auditor; "
                       "the standard-library audit ran without this stage (its verdict does not cover it)")
        return
    t0 = time.perf_counter()
    try:
        stage(run, want, au, req)
    finally:
        req.record["seconds"] = round(time.perf_counter() - t0, 3)


def opening_needs_every_batch(run, want, au, req: Request) -> bool:
    """An opening whose own verification re-inferred a sample (its protocol's ``verification``; the run's
    fresh scoring is the measurement) is proven batch by batch only here: the auditor must re-infer every
    batch. Any other request fails (returns True: nothing more to do)."""
    if run.kind != "confirmation" or want.settings["verify_batches"] is None or req.batches == "all":
        return False
    if req.batches is not None and req.batches >= len(run_batches(run)):
        return False
    asked = "no --reinfer" if req.batches is None else f"--reinfer {req.batches}"
    req.record = {"asked": req.batches is not None, "batches_asked": req.batches,
                  "note": "refused: an opening is audited with --reinfer all"}
    au.check(CHECK, False, str(run.manifest_path), "--reinfer of an opening",
             "all (its own verification re-inferred only the protocol's sample of "
             f"{want.settings['verify_batches']} batches: every other logit is proven by this stage alone; "
             "add --reinfer all --model-dir <the run's model folder>)", asked)
    return True


def job_of(run, want, au, req: Request, drawn) -> tuple[dict, dict | None]:
    """The drawn batches' rows and the child's job (their texts, the verified model folder); the job is
    None when an input or the model folder is not the run's (recorded in ``au``)."""
    rows = batch_rows(run, drawn, want.settings["max_length"])
    texts = read_texts(run, au, rows)
    meta = verify_model_dir(run, want, au, Path(req.model_dir))
    derived = backend.derived_job(run, want, au, req.derived_file, CHECK)
    if texts is None or meta is None or derived is False:
        return rows, None
    queries, corpus = texts
    return rows, {"model_dir": str(Path(req.model_dir).resolve()), "files": meta["files"],
                  "threads": req.threads, "derived": derived,
                  "max_length": want.settings["max_length"], "label_index": meta.get("label_index"),
                  "batches": [[[queries[q], corpus[r["doc_id"]]] for r in batch]
                              for (q, _), batch in rows.items()]}


class Unrecorded:
    """A recorder that records nothing: the early start's comparisons are made again, and recorded, by the
    check itself."""

    @staticmethod
    def check(name, ok, *detail) -> bool:
        return bool(ok)


class EarlyChild:
    """The child process started on ``job`` before the standard-library checks (speed only: it runs beside
    them); a thread waits for its answer."""

    def __init__(self, req: Request, job: dict):
        self.job, self.answer, self.stderr, self.seconds = job, None, "", None
        self.thread = threading.Thread(target=self._run, args=(req,), daemon=True)
        self.thread.start()

    def _run(self, req: Request) -> None:
        t0 = time.perf_counter()
        self.answer, self.stderr = run_child(req, self.job)
        self.seconds = round(time.perf_counter() - t0, 3)

    def result(self) -> tuple[dict | None, str, float]:
        self.thread.join()
        return self.answer, self.stderr, self.seconds


def start_early(run, want) -> None:
    """Start the re-inference child now, beside the other checks (speed only). The check uses its answer
    only when the job it builds itself, after every other check, is this job exactly; whatever goes wrong
    here is left to the check, which does it all again and records it."""
    req = REQUEST
    if req.batches is None or req.early is not None or run.reranker_kind == "run":
        return
    try:
        _, job = job_of(run, want, Unrecorded, req, draw(run_batches(run), req.batches, req.draw_seed))
    except Exception:  # noqa: BLE001 - the check itself meets the same problem and records it
        return
    if job is not None:
        req.early = EarlyChild(req, job)


def child_answer(req: Request, job: dict) -> tuple[dict | None, str, float, bool]:
    """The child's answer to ``job``: the early child's when it was started on this very job, else a child
    started now; and whether it was the early one."""
    if req.early is not None and req.early.job == job:
        return (*req.early.result(), True)
    t0 = time.perf_counter()
    answer, stderr = run_child(req, job)
    return answer, stderr, round(time.perf_counter() - t0, 3), False


def stage(run, want, au, req: Request) -> None:
    hand = req.seed is not None
    seed = req.draw_seed
    batches = run_batches(run)
    drawn = draw(batches, req.batches, seed)
    req.record.update({
        "asked": True, "batches_asked": req.batches, "batches_in_run": len(batches), "seed": seed,
        "seed_source": ("--reinfer-seed: CHOSEN BY HAND (a forced draw), not fresh randomness" if hand
                        else "secrets.randbits(64), drawn at audit time"),
        "draw": "random.Random(seed).sample(batches in run order, N); every batch when N = all or N >= "
                "their number",
        "drawn": [list(qb) for qb in drawn], "model_dir": str(Path(req.model_dir).resolve())})
    au.note(CHECK, f"{len(drawn)} of {len(batches)} batches drawn (seed {seed}, {req.record['seed_source']}) "
                   "and re-inferred with " + backend.by_what(want) + "; see info.reinfer")
    rows, job = job_of(run, want, au, req, drawn)
    if job is None:
        req.record["result"] = ("not re-inferred: an input or the model folder is not the run's (see "
                                "the failures)")
        return
    answer, stderr, req.record["child_seconds"], early = child_answer(req, job)
    req.record["child_started"] = "before the other checks, on this job" if early else "after them"
    if not au.check(CHECK, answer is not None, str(CHILD), "the re-inference process", "exit 0, logits",
                    stderr):
        return
    req.record["child"] = answer["facts"]
    req.record["child_process"] = answer["facts"].get("python")  # the interpreter: resolved path, version
    req.record["model_files_sha256"] = answer["facts"].get("model_files")  # each file as the child read it
    au.check(CHECK, answer["facts"].get("model_files") == job["files"], str(CHILD),
             "the sha256 of the model files the child loaded", job["files"],
             answer["facts"].get("model_files"))
    au.check(CHECK, answer["facts"]["mkl_cnr"] == "AUTO,STRICT", str(CHILD), "oneMKL numeric mode "
             "(MKL's report)", "AUTO,STRICT", answer["facts"]["mkl_cnr"])
    if job["derived"] is not None:  # the child ran the verified derived file, with the pinned session, and
        # made it again from the verified source by the recipe: the pin is the recipe's file of this model
        sha = job["derived"]["sha256"]
        ran = {"sha256": sha, "session": backend.SESSION, "rederived_sha256": sha}
        au.check(CHECK, answer["facts"].get("derived") == ran, str(CHILD), "the derived file the child ran "
                 "(hashed as read), its session, and the sha256 of the file the child made again from the "
                 "verified model by the recipe", ran, answer["facts"].get("derived"))
    req.record["results"] = compare(run, au, rows, answer)
    req.record["pairs"] = sum(b["pairs"] for b in req.record["results"])
