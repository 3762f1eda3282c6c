# Paths (one place), pins, run settings and small helpers shared by every rule file.
import json

from rerank_study.artefacts import manifest_keys
from rerank_study.config import candidate_params, repin_set, run_name, run_settings, run_shape
from rerank_study import studies as _studies
from rerank_study.errors import PipelineError, SealError
from rerank_study.fingerprint import library_sha256
from rerank_study.seal import guard as _guard
from rerank_study.seal.method import method_sha256
from rerank_study.names import STAND_IN
from rerank_study.reference import reference_name

LOCK = config["lockdir"]
STUDY = config["study"]  # the dataset, reranker and candidate source of this invocation (rerank_study.studies)
QRELS_DEV, QRELS_SEALED = _studies.qrels_names(STUDY)  # a one-qrels dataset: its two pinned, drawn parts
REPIN = repin_set(config)  # explicit re-pinning only (freeze_* targets); empty for every analysis run
RES = config["resources"]
OUT = config["results"]

# Confirmation mode: only with an unseal token, and only after every guard passed (before any job):
# the repository's own lock folder (or a labelled test fixture), no repin, frozen settings, pins and
# method, a tree equal to its commit, the locked environment, no look the ledgers do not know
# (rerank_study.seal.guard.check_unseal).
CONFIRM = bool(config["unseal"])
UNSEAL = None
if CONFIRM:
    if config["smoke"]:
        raise WorkflowError("a confirmation opening analyses the whole confirmation set: drop smoke=true")
    try:
        UNSEAL = _guard.check_unseal(config, LOCK, workflow.basedir)
    except SealError as _exc:
        raise WorkflowError(str(_exc)) from None
    # every job of the opening compiles its Python code (the installed environment's too) into a fresh, private
    # byte-code folder: no .pyc file on disk before the opening is ever read by it
    import tempfile as _tempfile

    os.environ["PYTHONPYCACHEPREFIX"] = _tempfile.mkdtemp(prefix="rerank-opening-pycache-")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    RUN = UNSEAL["run"]  # confirm-<protocol sha256[:12]>-<n>, or ...-test-<n> for a labelled test opening
else:
    RUN = run_name(config)
RUNDIR = f"{OUT}/{RUN}"
KIND = "confirmation" if CONFIRM else "development"
N_QUERIES, DEPTH = run_shape(config, confirmation=CONFIRM)
SETTINGS = run_settings(config, confirmation=CONFIRM)  # what the analysis uses: manifest, protocol, audit

# The study's inputs, checked before any job (a bad study stops here, naming the study, the file, the fix):
# its dataset and both qrels files pinned, its reranker pinned with one logit or a declared index, its
# candidates present (rerank_study.studies.check_study)
if "data" in REPIN and REPIN != {"data"}:
    raise WorkflowError(f"repin={config['repin']}: pin the data ALONE first (repin=data), commit it, then re-pin "
                        "the splits / candidates that are drawn from it in a second invocation.")
try:
    _studies.check_study(config, LOCK, REPIN, catalogue_path=Path(workflow.basedir) / config["data"]["catalogue"],
                         default_model_pins=Path(workflow.basedir) / "lockfiles" / "model_pins.json")
except PipelineError as _exc:
    raise WorkflowError(str(_exc)) from None
DATA_PINS = {"files": {}} if "data" in REPIN else json.loads(Path(f"{LOCK}/data_pins.json").read_text(encoding="utf-8"))
with open(f"{LOCK}/model_pins.json", encoding="utf-8") as _fh:
    MODEL_PINS = json.load(_fh)

# sha256 of the library's source (workflow/rerank_study/*.py): a param of every computing rule, so a
# change in the science reruns what depends on it (Snakemake tracks only the rule scripts themselves)
CODE = library_sha256(Path(workflow.basedir))
# sha256 of the method: every file of the checkout that can run (rerank_study.seal.method): recorded in the
# manifest; the confirmation protocol freezes it
METHOD_SHA = method_sha256(Path(workflow.basedir), LOCK, config["study_file"] or None, (OUT, RES))[0]

MODEL_FOLDER = (f"standin-seed{config['standin']['head_seed']}" if config["scorer"] == STAND_IN
                else f"ce-{MODEL_PINS['cross_encoder']['revision']}")

P = {
    # verified data (dev side); the sealed confirmation qrels live elsewhere (confirm.smk)
    "corpus": f"{RES}/data/{STUDY['dataset']}/corpus.jsonl",
    "queries": f"{RES}/data/{STUDY['dataset']}/queries.jsonl",
    "qrels_dev": f"{RES}/data/{STUDY['dataset']}/{QRELS_DEV}",
    "data_cache": f"{RES}/cache/{STUDY['dataset']}",
    # the sealed confirmation judgements: produced only by confirm.smk, after the guards, once per opening
    # (inside the opening's folder), right after the opening's 'started' line was written to the ledger
    "qrels_confirm": f"{RUNDIR}/sealed/{QRELS_SEALED}",
    "opening_started": f"{RUNDIR}/OPENING_STARTED.json",
    "sealed_cache": f"{RES}/cache/sealed",
    # the committed pins
    "data_pins": f"{LOCK}/data_pins.json",
    "model_pins": f"{LOCK}/model_pins.json",
    "derived_pins": f"{LOCK}/derived_pins.json",
    # the query splits (committed lists, verified into resources/)
    "split_dev": f"{RES}/splits/dev.txt",
    "split_confirm": f"{RES}/splits/confirm.txt",
    # the frozen candidates: an INPUT of the experiment, committed and pinned (never regenerated by a run)
    "candidates": f"{LOCK}/candidates/candidates.tsv",
    "frozen_bm25": f"{LOCK}/candidates/bm25.tsv.gz",
    "frozen_dense": f"{LOCK}/candidates/dense.tsv.gz",
    # regeneration (the drift check and explicit re-freezing only; see candidates.smk)
    "bi_encoder": f"{RES}/models/bi-encoder/MODEL.json",
    "bm25": f"{RES}/candidates/regenerated/bm25.tsv",
    "dense": f"{RES}/candidates/regenerated/dense.tsv",
    "regenerated": f"{RES}/candidates/regenerated/candidates.tsv",
    "regenerated_meta": f"{RES}/candidates/regenerated/candidates.json",
    "embedding_cache": f"{RES}/cache/embeddings",
    "drift": f"{OUT}/check_candidates/drift.tsv",
    "drift_json": f"{OUT}/check_candidates/drift.json",
    "freeze_candidates": f"{RES}/freeze/candidates.json",
    "freeze_data": f"{RES}/freeze/data.json",
    "freeze_splits": f"{RES}/freeze/splits.json",
    # the cross-encoder (pinned or stand-in)
    "model": f"{RES}/models/{MODEL_FOLDER}/MODEL.json",
    "score_cache": f"{RES}/cache/ce_scores",
    # one run of the analysis
    "run_candidates": f"{RUNDIR}/inputs/candidates.tsv",
    "run_qrels": f"{RUNDIR}/inputs/qrels.tsv",
    "run_queries": f"{RUNDIR}/inputs/queries.txt",
    "groups": f"{RUNDIR}/groups.tsv",
    "groups_meta": f"{RUNDIR}/groups.json",
    "pairs": f"{RUNDIR}/pairs.tsv",
    "shape_check": f"{RUNDIR}/shape_check.json",
    "scoring_measurements": f"{RUNDIR}/measurements/scoring.json",
    "verification": f"{RUNDIR}/verification.json",
    "verification_measurements": f"{RUNDIR}/measurements/verification.json",
    "rankings": f"{RUNDIR}/rankings.tsv",
    "run_rrf": f"{RUNDIR}/runs/rrf.trec",
    "run_ce": f"{RUNDIR}/runs/ce.trec",
    "run_blend": f"{RUNDIR}/runs/blend.trec",
    "per_query": f"{RUNDIR}/per_query.tsv",
    # Parquet copies for pandas users (not audited: the TSVs are the audited artefacts)
    "pairs_parquet": f"{RUNDIR}/pairs.parquet",
    "per_query_parquet": f"{RUNDIR}/per_query.parquet",
    "grouped_indices": f"{RUNDIR}/bootstrap/grouped_indices.tsv",
    "query_indices": f"{RUNDIR}/bootstrap/query_indices.tsv",
    "replicates": f"{RUNDIR}/bootstrap/replicates.tsv",
    "summary": f"{RUNDIR}/summary.json",
    "report": f"{RUNDIR}/report.md",
    "forest_plot": f"{RUNDIR}/figures/forest.png",
    "delta_plot": f"{RUNDIR}/figures/primary_delta.png",
    "report_measurements": f"{RUNDIR}/measurements/report.json",
    "manifest": f"{RUNDIR}/manifest.json",
    "audit": f"{RUNDIR}/audit.json",
    "reproduction": f"{RUNDIR}/reproduction.md",
    "reproduction_json": f"{RUNDIR}/reproduction.json",
    "opening": f"{RUNDIR}/OPENING.json",
}
SPLIT_LISTS = {"dev": f"{LOCK}/splits/dev.txt", "confirm": f"{LOCK}/splits/confirm.txt"}  # committed, pinned
# the committed reference this run's shape and scorer compare with (snakemake check_reproduction)
REFERENCE = None if CONFIRM else f"{LOCK}/reference/{reference_name(config['scorer'], config['smoke'])}"
# what a run analyses: the development split and qrels, or (confirmation) the sealed ones
RUN_SPLIT = P["split_confirm"] if CONFIRM else P["split_dev"]
RUN_QRELS_KEY = "qrels_confirm" if CONFIRM else "qrels_dev"
RUN_QRELS_PIN = QRELS_SEALED if CONFIRM else QRELS_DEV


def _require_committed(path, what, repin_key):
    """The committed, pinned inputs must be present before any job runs (unless this invocation re-pins them)."""
    if repin_key not in REPIN and not Path(path).exists():
        raise WorkflowError(f"MISSING {what}: {path} does not exist. It is a committed input of the experiment: restore "
                            f"it from git (git checkout -- {LOCK}), or make it knowingly (this changes the experiment) "
                            f"with: snakemake --config repin={repin_key}")


for _path in SPLIT_LISTS.values() if "data" not in REPIN else ():  # (repin=data: nothing is drawn from data yet)
    _require_committed(_path, "QUERY SPLIT LIST", "splits")
if not REPIN:  # (a re-pinning invocation reads no candidates: data -> splits -> candidates, in that order)
    _require_committed(P["candidates"], "FROZEN CANDIDATE TABLE", "candidates")
if not REPIN:
    _require_committed(P["derived_pins"], "DERIVED PINS", "splits,candidates")


def LOCK_OF(wildcards, input):
    """The lockfile folder, as the folder of the data pins a rule declares as an input."""
    return os.path.dirname(input.data_pins)


def log_of(rule_name, per_run=True):
    return f"{RUNDIR}/logs/{rule_name}.log" if per_run else f"{RES}/logs/{rule_name}.log"


def bench_of(rule_name, per_run=True):
    return f"{RUNDIR}/benchmarks/{rule_name}.tsv" if per_run else f"{RES}/benchmarks/{rule_name}.tsv"


def data_sha(name):
    if "data" in REPIN:  # a repin=data invocation only pins (its `all` is the receipt); no data rule can run
        return "0" * 64
    return DATA_PINS["files"][name]["sha256"]


def _regenerable(wildcards):
    """Only the frozen RRF table can be regenerated; a TREC-run study's candidates ARE the user's run."""
    if STUDY["candidates"] != "frozen":
        raise WorkflowError(f"STUDY {STUDY['name']!r}: check_candidates regenerates BM25 + dense + RRF and compares "
                            f"with the frozen table; this study's candidates are a user's TREC run "
                            f"({LOCK}/candidates/run.trec, pinned): there is nothing to regenerate.")
    return P["regenerated"]


def _development_inputs():
    """The verified data folder (else the mirror) and a user's TREC run: what the development side reads."""
    folder = Path(P["queries"]).parent
    data_dir = folder if (folder / "queries.jsonl").is_file() else (config["data_mirror"] or None)
    runs = {}
    if config["trec_run"] and Path(config["trec_run"]).is_file():
        from rerank_study.trec import run_lines

        runs[config["trec_run"]] = {fields[0] for _, fields in run_lines(config["trec_run"])}
    return data_dir, runs


# The seal, before any job: no development input of this invocation (the development qrels, split, candidates,
# a user's run) holds a judgement, a query id or a query text of a sealed set in any lock folder of the
# repository or this one (rerank_study.seal.registry; the rule splits repeats it on the verified data)
if "data" not in REPIN:
    try:
        _guard.check_development(config, LOCK, workflow.basedir, *_development_inputs(),
                                 action=f"run study {STUDY['name']!r}", own_pending="splits" in REPIN)
    except PipelineError as _exc:
        raise WorkflowError(str(_exc)) from None
