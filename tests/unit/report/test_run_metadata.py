"""ir_metadata sidecars (rerank_study.report.run_metadata): the text of a tiny run's sidecar against the file
written
out here by hand from docs/outputs.md; PyYAML (an independent parser) reads it back with ir_metadata's
documented field paths (irgroup/ir_metadata docs/metadata/*.md); the audit's own line renderer accepts it and
refuses a changed line."""

import types

import yaml
from conftest import audit_module

from rerank_study.report import run_metadata

SETTINGS = {"study": {"candidates": "frozen", "dataset": "tinyset", "reranker": "org/ce-model",
                      "reranker_kind": "cross-encoder", "qrels_dev": "qrels/train.tsv",
                      "qrels_confirm": "qrels/test.tsv"},
            "depth": 3, "max_length": 256, "blend_k": 60}
PINS = {"zip": {"url": "https://example.org/tinyset.zip"},
        "files": {"corpus.jsonl": {"sha256": "c" * 64}, "queries.jsonl": {"sha256": "a" * 64},
                  "qrels/train.tsv": {"sha256": "d" * 64}, "qrels/test.tsv": {"sha256": "e" * 64}}}
MODEL = {"identity": "org/ce-model@rev1", "weights_sha256": "f" * 64}
RUN = {"file": "runs/ce.trec", "sha256": "1" * 64, "kind": "development", "n_analysed": 2,
       "candidates_sha256": "2" * 64, "method_sha256": "3" * 64}
PLATFORM = run_metadata.platform_section(
    {"model": "Some CPU \u00ae", "architecture": "x86_64", "operation_mode": "64-bit", "cores": 8},
    {"kernel": "Linux 6.1", "distribution": None, "ram_gb": 16},
    [("python", "3.11.7"), *((n, "1.0") for n in run_metadata.LIBRARIES)], 4)
CHECKOUT = {"repository": None, "commit": "4" * 40}

CE_SIDECAR = f"""\
# ir_metadata (PRIMAD: platform, implementation, method, data; https://www.ir-metadata.org) of runs/ce.trec
run:
  file: "runs/ce.trec"
  sha256: "{"1" * 64}"
  tag: "ce"
platform:
  hardware:
    cpu:
      model: "Some CPU \\u00ae"
      architecture: "x86_64"
      operation mode: "64-bit"
      number of cores: 8
      threads used: 4
    ram: "16 GB"
  operating system:
    kernel: "Linux 6.1"
    distribution: null
  software:
    libraries:
      python:
      - "python==3.11.7"
      - "numpy==1.0"
      - "scipy==1.0"
      - "snakemake==1.0"
      - "tokenizers==1.0"
      - "torch==1.0"
      - "transformers==1.0"
implementation:
  executable:
    cmd: "snakemake --cores all (README.md); this run's settings are manifest.json's"
  source:
    lang:
    - "python"
    repository: null
    commit: "{"4" * 40}"
    method sha256: "{"3" * 64}"
method:
  automatic: true
  score ties: "score descending, then document id as a string descending"
  retrieval:
  - name: "rrf"
    method: "reciprocal rank fusion of BM25 and dense retrieval (the frozen candidates)"
    depth: 3
    candidates sha256: "{"2" * 64}"
  - name: "ce"
    method: "org/ce-model"
    reranker kind: "cross-encoder"
    identity: "org/ce-model@rev1"
    weights sha256: "{"f" * 64}"
    max length: 256
    reranks: "rrf"
data:
  test collection:
    name: "tinyset"
    source: "https://example.org/tinyset.zip"
    corpus: "corpus.jsonl"
    corpus sha256: "{"c" * 64}"
    topics: "queries.jsonl"
    topics sha256: "{"a" * 64}"
    qrels: "qrels/train.tsv"
    qrels sha256: "{"d" * 64}"
    queries analysed: 2
    split: "development"
"""


def sidecar(method="ce", **run):
    return run_metadata.sidecar(method, {**RUN, **run, "file": f"runs/{method}.trec"}, PLATFORM, CHECKOUT,
                                SETTINGS, MODEL, PINS)


def test_the_sidecar_of_a_reranked_run_is_the_hand_written_file():
    assert sidecar() == CE_SIDECAR


def test_pyyaml_reads_ir_metadatas_field_paths():
    doc = yaml.safe_load(sidecar("blend"))
    assert doc["platform"]["hardware"]["cpu"]["model"] == "Some CPU \u00ae"
    assert doc["platform"]["hardware"]["cpu"]["number of cores"] == 8
    assert doc["platform"]["software"]["libraries"]["python"][0] == "python==3.11.7"
    assert doc["implementation"]["source"] == {"lang": ["python"], "repository": None, "commit": "4" * 40,
                                               "method sha256": "3" * 64}
    stages = doc["method"]["retrieval"]
    assert [s["name"] for s in stages] == ["rrf", "ce", "blend"]
    assert stages[1]["reranks"] == "rrf" and stages[2]["interpolates"] == ["rrf",
                                                                           "ce"] and stages[2]["k"] == 60
    assert doc["method"]["automatic"] is True
    assert doc["data"]["test collection"]["qrels sha256"] == "d" * 64


def test_each_run_lists_only_the_stages_behind_it_and_an_opening_names_the_sealed_qrels():
    assert [s["name"] for s in yaml.safe_load(sidecar("rrf"))["method"]["retrieval"]] == ["rrf"]
    data = yaml.safe_load(sidecar("ce", kind="confirmation"))["data"]["test collection"]
    assert (data["qrels"], data["qrels sha256"], data["split"]) == ("qrels/test.tsv", "e" * 64,
                                                                    "confirmation")


def fake_run(kind="development"):
    """What the audit's check reads of a run, for the tiny inputs above (the files' sha256 as RUN says)."""
    run = types.SimpleNamespace(kind=kind, analysed=["q1", "q2"],
                                manifest={"method_sha256": "3" * 64, "model_identity": MODEL["identity"],
                                          "model_weights_sha256": MODEL["weights_sha256"]})
    run.path = lambda key: key
    run.reranker_kind = "cross-encoder"  # scored with SCORED's versions, 4 threads at most
    run.measurements = lambda key: {"versions": SCORED, "per_shard": [{"threads": 2}, {"threads": 4}]}
    anchor = types.SimpleNamespace(lock=lambda name: PINS)
    return run, types.SimpleNamespace(settings=SETTINGS, anchor=anchor)


SCORED = {"torch": "1.0", "transformers": "1.0", "tokenizers": "1.0"}  # as PLATFORM's versions


def audit_verdict(method, text, monkeypatch):
    check = audit_module("checks.run_metadata")
    # the locked releases of the other libraries, as PLATFORM's
    monkeypatch.setattr(check, "locked_versions", lambda: {"numpy": "1.0", "scipy": "1.0",
                                                           "snakemake": "1.0"})
    sha = {"run_" + method: "1" * 64, "run_candidates": "2" * 64}
    monkeypatch.setattr(check, "sha256_of", lambda key: sha[key])
    run, want = fake_run()
    return check.first_mismatch(text[:-1].split("\n"), check.expected_lines(method, run, want))


def test_the_audits_renderer_accepts_the_sidecar_and_names_a_changed_line(monkeypatch):
    for method in ("rrf", "ce", "blend"):
        assert audit_verdict(method, sidecar(method), monkeypatch) is None, method
    changed = CE_SIDECAR.replace("    depth: 3\n", "    depth: 4\n")
    assert audit_verdict("ce", changed, monkeypatch) == (43, "    depth: 3", "    depth: 4")  # the 43rd line
    unquoted = CE_SIDECAR.replace('model: "Some CPU \\u00ae"', "model: Some CPU")
    line, form, found = audit_verdict("ce", unquoted, monkeypatch)
    assert (line, found) == (9, "      model: Some CPU") and form.startswith("      model: ")
    # the red team's forgeries of the platform lines: another torch than the one scored with, more threads, a
    # carriage return inside a library line, another numpy than the locked one
    for old_line, new_line in (('"torch==1.0"', '"torch==2.5.1+cu124"'),
                               ("threads used: 4", "threads used: 64"),
                               ('"python==3.11.7"', '"python==3.11.7\\r  sha256: 0"'),
                               ('"numpy==1.0"', '"numpy==1.1"')):
        forged = CE_SIDECAR.replace(old_line, new_line)
        assert forged != CE_SIDECAR and audit_verdict("ce", forged, monkeypatch) is not None, new_line
