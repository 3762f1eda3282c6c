"""Rule run_metadata: the ir_metadata sidecar of each TREC run (runs/<method>.yaml;
rerank_study.report.run_metadata): the machine's facts, the checkout's commit, the ranking stages with their
pins and
the data pins."""

import platform
import subprocess
from importlib import metadata

from rerank_study.core import layout, machine
from rerank_study.core.fileio import atomic_write_text, read_json, sha256_file
from rerank_study.core.names import METHODS
from rerank_study.core.rule import run
from rerank_study.data import splits
from rerank_study.report import run_metadata

ARTEFACT_PATH = {a.key: a.path for a in layout.RUN_ARTEFACTS}


def git(basedir: str, *args: str) -> str | None:
    """One line of git's output about the checkout of the workflow; None where there is no git or checkout."""
    try:
        out = subprocess.run(["git", "-C", basedir, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions() -> list[tuple[str, str]]:
    return [("python", platform.python_version())] + [(n, metadata.version(n))
                                                      for n in run_metadata.LIBRARIES]


def scoring_threads(sm) -> int | None:
    """The torch threads the cross-encoder was scored with (its scoring record; the most any shard used); None
    for a run-file reranker (nothing scored here) or a run scored from the cache alone."""
    if "scoring" not in sm.input.keys():
        return None
    return max((s["threads"] for s in read_json(sm.input.scoring).get("per_shard", [])), default=None)


def main(sm):
    cpu, os_facts = machine.ir_metadata_facts()
    facts = run_metadata.platform_section(cpu, os_facts, versions(), scoring_threads(sm))
    where = sm.scriptdir  # the checkout of the workflow this job runs
    checkout = {"repository": git(where, "config", "--get", "remote.origin.url"),
                "commit": git(where, "rev-parse", "HEAD")}
    model, pins = read_json(sm.input.model), read_json(sm.input.data_pins)
    candidates_sha256, n_analysed = sha256_file(sm.input.candidates), len(splits.read_split(sm.input.queries))
    for method in METHODS:
        path = getattr(sm.input, method)
        record = {"file": ARTEFACT_PATH[f"run_{method}"], "sha256": sha256_file(path), "kind": sm.params.kind,
                  "n_analysed": n_analysed, "candidates_sha256": candidates_sha256,
                  "method_sha256": sm.params.method}
        atomic_write_text(getattr(sm.output, method), run_metadata.sidecar(
            method, record, facts, checkout, sm.params.settings, model, pins))


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
