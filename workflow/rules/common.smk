# Paths (one place), pins and small helpers shared by every rule file.
import json
from rerank_study import protocol as _protocol
from rerank_study.config import run_name, run_shape
from rerank_study.errors import SealError

LOCK = config["lockdir"]
RES = config["resources"]
OUT = config["results"]

# Confirmation mode: only with an unseal token, and only after every guard passed (before any job).
CONFIRM = bool(config["unseal"])
UNSEAL = None
if CONFIRM:
    try:
        UNSEAL = _protocol.check_unseal(config, LOCK, workflow.basedir)
    except SealError as _exc:
        raise WorkflowError(str(_exc)) from None
    if config["smoke"]:
        raise WorkflowError("a confirmation opening analyses the whole confirmation set: drop smoke=true")
    RUN = f"confirm-{UNSEAL['sha256'][:12]}-{UNSEAL['opening']}"
    N_QUERIES, DEPTH = None, config["candidates"]["depth"]
else:
    RUN = run_name(config)
    N_QUERIES, DEPTH = run_shape(config)
RUNDIR = f"{OUT}/{RUN}"
KIND = "confirmation" if CONFIRM else "development"
BOOTSTRAP_SEED = config["bootstrap"]["confirm_seed"] if CONFIRM else config["bootstrap"]["seed"]

with open(f"{LOCK}/data_pins.json", encoding="utf-8") as _fh:
    DATA_PINS = json.load(_fh)
with open(f"{LOCK}/model_pins.json", encoding="utf-8") as _fh:
    MODEL_PINS = json.load(_fh)

# sha256 of the library's source (workflow/rerank_study/*.py): a param of every computing rule,
# so that a change in the science reruns what depends on it (Snakemake only tracks the rule
# scripts themselves); also recorded in every manifest.
import hashlib as _hashlib

_h = _hashlib.sha256()
for _p in sorted((Path(workflow.basedir) / "workflow" / "rerank_study").glob("*.py")):
    _h.update(_p.name.encode() + b"\0" + _p.read_bytes())
CODE = _h.hexdigest()

_ce = MODEL_PINS["cross_encoder"]
MODEL_FOLDER = (f"standin-seed{config['standin']['head_seed']}" if config["scorer"] == "stand-in"
                else f"ce-{_ce['revision']}")

P = {
    # verified data (dev side); the sealed confirmation qrels live elsewhere (confirm.smk)
    "corpus": f"{RES}/data/scifact/corpus.jsonl",
    "queries": f"{RES}/data/scifact/queries.jsonl",
    "qrels_dev": f"{RES}/data/scifact/qrels/train.tsv",
    "data_cache": f"{RES}/cache/scifact",
    # the sealed confirmation judgements: produced only by confirm.smk, after the guards
    "qrels_confirm": f"{RES}/sealed/scifact/{_protocol.SEALED_QRELS}",
    "sealed_cache": f"{RES}/cache/sealed",
    # splits and frozen candidates
    "split_dev": f"{RES}/splits/dev.txt",
    "split_confirm": f"{RES}/splits/confirm.txt",
    "bi_encoder": f"{RES}/models/bi-encoder/MODEL.json",
    "bm25": f"{RES}/candidates/bm25_top.tsv",
    "bm25_run": f"{RES}/candidates/bm25_top.trec",
    "dense": f"{RES}/candidates/dense_top.tsv",
    "dense_run": f"{RES}/candidates/dense_top.trec",
    "candidates": f"{RES}/candidates/candidates.tsv",
    "candidates_run": f"{RES}/candidates/candidates_rrf.trec",
    "candidates_meta": f"{RES}/candidates/candidates.json",
    "embedding_cache": f"{RES}/cache/embeddings",
    # the cross-encoder (pinned or stand-in)
    "model": f"{RES}/models/{MODEL_FOLDER}/MODEL.json",
    "score_cache": f"{RES}/cache/ce_scores",
    # one run of the development analysis
    "run_candidates": f"{RUNDIR}/inputs/candidates.tsv",
    "run_qrels": f"{RUNDIR}/inputs/qrels.tsv",
    "run_queries": f"{RUNDIR}/inputs/queries.txt",
    "groups": f"{RUNDIR}/groups.tsv",
    "groups_meta": f"{RUNDIR}/groups.json",
    "pairs": f"{RUNDIR}/pairs.tsv",
    "shape_check": f"{RUNDIR}/shape_check.json",
    "scoring_measurements": f"{RUNDIR}/measurements/scoring.json",
    "rankings": f"{RUNDIR}/rankings.tsv",
    "run_rrf": f"{RUNDIR}/runs/rrf.trec",
    "run_ce": f"{RUNDIR}/runs/ce.trec",
    "run_blend": f"{RUNDIR}/runs/blend.trec",
    "per_query": f"{RUNDIR}/per_query.tsv",
    "grouped_indices": f"{RUNDIR}/bootstrap/grouped_indices.tsv",
    "query_indices": f"{RUNDIR}/bootstrap/query_indices.tsv",
    "replicates": f"{RUNDIR}/bootstrap/replicates.tsv",
    "summary": f"{RUNDIR}/summary.json",
    "report": f"{RUNDIR}/report.md",
    "forest_plot": f"{RUNDIR}/figures/forest.png",
    "delta_plot": f"{RUNDIR}/figures/primary_delta.png",
    "manifest": f"{RUNDIR}/manifest.json",
    "audit": f"{RUNDIR}/audit.json",
    "opening": f"{RUNDIR}/OPENING.json",
}
# what a run analyses: the development split and qrels, or (confirmation) the sealed ones
RUN_SPLIT = P["split_confirm"] if CONFIRM else P["split_dev"]
RUN_QRELS = P["qrels_confirm"] if CONFIRM else P["qrels_dev"]
RUN_QRELS_PIN = _protocol.SEALED_QRELS if CONFIRM else "qrels/train.tsv"


def log_of(rule_name, per_run=True):
    return f"{RUNDIR}/logs/{rule_name}.log" if per_run else f"{RES}/logs/{rule_name}.log"


def bench_of(rule_name, per_run=True):
    return f"{RUNDIR}/benchmarks/{rule_name}.tsv" if per_run else f"{RES}/benchmarks/{rule_name}.tsv"


def data_sha(name):
    return DATA_PINS["files"][name]["sha256"]
