"""Check 'run_metadata': each TREC run's ir_metadata sidecar (runs/<method>.yaml) is the file docs/outputs.md
documents ("ir_metadata sidecars"), line by line. A line the run's files, settings and pins decide is rendered
here and must be equal (the run file's sha256, the stages with their pins, the data pins, the method hash); a
line describing the machine or the checkout (the platform section, repository, commit) must have its
documented form; the library versions and the threads are the scoring record's (the locked release where
nothing was scored). Written from the documentation, not from the pipeline's run_metadata module."""

from __future__ import annotations

import json
import re

from expected.definitions import METHODS
from read.layout import RUN_FILE
from read.readers import sha256_of, text_of

from checks.measurements import locked_versions

CHECK = "run_metadata"
STRING = r'"(?:[^"\\\x00-\x1f\x7f-\uffff]|\\["\\/bfnrt]|\\u[0-9a-f]{4})*"'  # a JSON string of ASCII text
STRING_OR_NULL = f"(?:{STRING}|null)"
LIBRARIES = ("python", "numpy", "scipy", "snakemake", "tokenizers", "torch", "transformers")
FIRST_STAGE = {"frozen": "reciprocal rank fusion of BM25 and dense retrieval (the frozen candidates)",
               "trec": "the study's pinned TREC run (its first stage, frozen as the candidates)"}
TIES = "score descending, then document id as a string descending"


def q(value) -> str:
    return "null" if value is None else json.dumps(value)


def form(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def scored_with(run) -> tuple[dict, int | None]:
    """(library versions, torch threads) of the scoring record: what the cross-encoder was scored with (the
    most threads any shard used); ({}, None) for a run-file reranker, which scores nothing here."""
    if run.reranker_kind == RUN_FILE:
        return {}, None
    rec = run.measurements("scoring_measurements")
    return rec.get("versions") or {}, max((s["threads"] for s in rec.get("per_shard", [])), default=None)


def library_line(name: str, locked: dict, scored: dict):
    """A library's line: the version the scoring record names (torch, transformers, tokenizers of a
    cross-encoder run), else the locked release with any local build tag (+cpu); python's by form (no lock
    pins it)."""
    if name == "python":
        return form('      - "python==[0-9]+[.][0-9]+[.][0-9]+[a-z0-9]*"')
    if name in scored:
        return f"      - {q(name + '==' + scored[name])}"
    return form('      - '
                f'"{re.escape(name)}=={re.escape(locked.get(name, "(not locked)"))}(?:[+][a-z0-9.]+)?"')


def platform_lines(run) -> list:
    scored, threads = scored_with(run)
    locked = locked_versions()
    lines = ["platform:", "  hardware:", "    cpu:", form(f"      model: {STRING}"),
             form(f"      architecture: {STRING}"), form('      operation mode: "(32|64)-bit"'),
             form("      number of cores: [1-9][0-9]*"), f"      threads used: {q(threads)}",
             form('    ram: (?:"[0-9]+ GB"|null)'), "  operating system:", form(f"    kernel: {STRING}"),
             form(f"    distribution: {STRING_OR_NULL}"), "  software:", "    libraries:", "      python:"]
    return lines + [library_line(name, locked, scored) for name in LIBRARIES]


def stage_lines(method: str, s: dict, manifest: dict, candidates_sha256: str) -> list[str]:
    study, out = s["study"], []
    out += ['  - name: "rrf"', f"    method: {q(FIRST_STAGE[study['candidates']])}",
            f"    depth: {s['depth']}", f"    candidates sha256: {q(candidates_sha256)}"]
    if method in ("ce", "blend"):
        out += ['  - name: "ce"', f"    method: {q(study['reranker'])}", "    reranker kind: "
                f"{q(study['reranker_kind'])}",
                f"    identity: {q(manifest['model_identity'])}",
                f"    weights sha256: {q(manifest['model_weights_sha256'])}"]
        out += [f"    max length: {s['max_length']}"] if study["reranker_kind"] == "cross-encoder" else []
        out += ['    reranks: "rrf"']
    if method == "blend":
        out += ['  - name: "blend"', '    method: "1/(k + r0) + 1/(k + r1) of the RRF rank r0 and the '
                'reranker\'s rank r1"', f"    k: {s['blend_k']}", "    interpolates:", '    - "rrf"',
                '    - "ce"']
    return out


def expected_lines(method: str, run, want) -> list:
    """The sidecar of ``method``'s run: exact lines (str) and lines of a documented form (re.Pattern)."""
    s, files = want.settings, want.anchor.lock("data_pins.json")
    pinned = files["files"]
    qrels = s["study"]["qrels_confirm" if run.kind == "confirmation" else "qrels_dev"]
    head = [f"# ir_metadata (PRIMAD: platform, implementation, method, data; https://www.ir-metadata.org) of "
            f"runs/{method}.trec", "run:", f'  file: "runs/{method}.trec"',
            f"  sha256: {q(sha256_of(run.path('run_' + method)))}", f"  tag: {q(method)}"]
    implementation = [
        "implementation:", "  executable:",
        "    cmd: \"snakemake --cores all (README.md); this run's settings are manifest.json's\"",
        "  source:", "    lang:", '    - "python"', form(f"    repository: {STRING_OR_NULL}"),
        form('    commit: (?:"[0-9a-f]{40}"|null)'), f"    method sha256: {q(run.manifest['method_sha256'])}"]
    method_part = ["method:", "  automatic: true", f"  score ties: {q(TIES)}", "  retrieval:",
                   *stage_lines(method, s, run.manifest, sha256_of(run.path("run_candidates")))]
    data = ["data:", "  test collection:", f"    name: {q(s['study']['dataset'])}",
            f"    source: {q(files.get('zip', {}).get('url'))}", '    corpus: "corpus.jsonl"',
            f"    corpus sha256: {q(pinned['corpus.jsonl']['sha256'])}", '    topics: "queries.jsonl"',
            f"    topics sha256: {q(pinned['queries.jsonl']['sha256'])}", f"    qrels: {q(qrels)}",
            f"    qrels sha256: {q(pinned[qrels]['sha256'])}", f"    queries analysed: {len(run.analysed)}",
            f"    split: {q(run.kind)}"]
    return head + platform_lines(run) + implementation + method_part + data


def first_mismatch(found: list[str], expect: list):
    """(line number, expected, found) of the first line that differs, or None."""
    for i in range(max(len(found), len(expect))):
        want = expect[i] if i < len(expect) else "(end of file)"
        got = found[i] if i < len(found) else "(end of file)"
        ok = (want.fullmatch(got) is not None) if isinstance(want, re.Pattern) else want == got
        if not ok:
            return i + 1, want.pattern if isinstance(want, re.Pattern) else want, got
    return None


def check_run_metadata(run, want, au) -> None:
    for method in METHODS:
        path = run.path(f"meta_{method}")
        found = text_of(path).splitlines()
        bad = first_mismatch(found, expected_lines(method, run, want))
        au.check(CHECK, bad is None, str(path), f"line {bad[0]}" if bad else "every line",
                 bad[1] if bad else None, bad[2] if bad else None)
