"""ir_metadata sidecars of a run's TREC runs (``runs/<method>.yaml``), in the PRIMAD fields
``irgroup/ir_metadata`` documents (docs/metadata/{platform,implementation,method,data}.md): what a run was
made on (platform), by which code (implementation), how (method: the ranking stages up to this run, with their
pins) and from which data. The run files themselves stay trec_eval-clean; the layout of a sidecar is
docs/outputs.md ("ir_metadata").

Pure: facts in, YAML text out. The platform section (CPU, memory, kernel, library versions) and the checkout
(repository, commit) describe the machine and the clone, so a sidecar is not byte-reproducible; every other
line is a function of the run's settings, pins and files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ..core.names import BLEND, CE, CROSS_ENCODER, METHODS, RRF
from ..rankings.ranking import TIE_RULE_TEXT

HEADER = ("# ir_metadata (PRIMAD: platform, implementation, method, data; https://www.ir-metadata.org) of "
          "{file}")
CMD = "snakemake --cores all (README.md); this run's settings are manifest.json's"
FIRST_STAGE = {"frozen": "reciprocal rank fusion of BM25 and dense retrieval (the frozen candidates)",
               "trec": "the study's pinned TREC run (its first stage, frozen as the candidates)"}
BLEND_RULE = "1/(k + r0) + 1/(k + r1) of the RRF rank r0 and the reranker's rank r1"
# the Python distributions a run's ranking depends on, named in the platform section with their versions
LIBRARIES = ("numpy", "scipy", "snakemake", "tokenizers", "torch", "transformers")


def scalar(value) -> str:
    """A YAML scalar: null, true/false, an integer, or a double-quoted string (JSON's escapes, all YAML's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    raise TypeError(f"not a sidecar scalar: {value!r}")


def yaml_lines(tree: Mapping, indent: int = 0) -> list[str]:
    """Block mappings and block sequences (``- item``, a mapping item's first key on the dash line)."""
    pad, out = " " * indent, []
    for key, val in tree.items():
        if isinstance(val, Mapping):
            out += [f"{pad}{key}:", *yaml_lines(val, indent + 2)]
        elif isinstance(val, list):
            out.append(f"{pad}{key}:")
            for item in val:
                if isinstance(item, Mapping):
                    first, *rest = yaml_lines(item, indent + 2)
                    out += [f"{pad}- {first.lstrip()}", *rest]
                else:
                    out.append(f"{pad}- {scalar(item)}")
        else:
            out.append(f"{pad}{key}: {scalar(val)}")
    return out


def stages(method: str, settings: Mapping, model: Mapping, candidates_sha256: str) -> list[dict]:
    """The ranking stages behind ``method``'s run: RRF; the reranker on RRF; the blend of the two."""
    study = settings["study"]
    rrf = {"name": RRF, "method": FIRST_STAGE[study["candidates"]], "depth": settings["depth"],
           "candidates sha256": candidates_sha256}
    ce = {"name": CE, "method": study["reranker"], "reranker kind": study["reranker_kind"],
          "identity": model["identity"], "weights sha256": model["weights_sha256"],
          **({"max length": settings["max_length"]} if study["reranker_kind"] == CROSS_ENCODER else {}),
          "reranks": RRF}
    blend = {"name": BLEND, "method": BLEND_RULE, "k": settings["blend_k"], "interpolates": [RRF, CE]}
    return [rrf, ce, blend][:METHODS.index(method) + 1]


def data_section(settings: Mapping, kind: str, n_analysed: int, data_pins: Mapping) -> dict:
    study, files = settings["study"], data_pins["files"]
    qrels = study["qrels_confirm" if kind == "confirmation" else "qrels_dev"]
    return {"test collection": {
        "name": study["dataset"], "source": data_pins.get("zip", {}).get("url"),
        "corpus": "corpus.jsonl", "corpus sha256": files["corpus.jsonl"]["sha256"],
        "topics": "queries.jsonl", "topics sha256": files["queries.jsonl"]["sha256"],
        "qrels": qrels, "qrels sha256": files[qrels]["sha256"],
        "queries analysed": n_analysed, "split": kind}}


def sidecar(method: str, run: Mapping, platform: Mapping, checkout: Mapping, settings: Mapping,
            model: Mapping, data_pins: Mapping) -> str:
    """The text of ``runs/<method>.yaml``. ``run``: file (inside the run folder), sha256, kind (development or
    confirmation), n_analysed (queries), candidates_sha256, method_sha256; ``platform``: the machine's facts;
    ``checkout``: repository and commit (None where unknown); ``model``: the reranker record (identity,
    weights_sha256)."""
    tree = {
        "run": {"file": run["file"], "sha256": run["sha256"], "tag": method},
        "platform": platform,
        "implementation": {"executable": {"cmd": CMD}, "source": {
            "lang": ["python"], "repository": checkout["repository"], "commit": checkout["commit"],
            "method sha256": run["method_sha256"]}},
        "method": {"automatic": True, "score ties": TIE_RULE_TEXT,
                   "retrieval": stages(method, settings, model, run["candidates_sha256"])},
        "data": data_section(settings, run["kind"], run["n_analysed"], data_pins),
    }
    return "\n".join([HEADER.format(file=run["file"]), *yaml_lines(tree)]) + "\n"


def platform_section(cpu: Mapping, os_facts: Mapping, versions: Sequence[tuple[str, str]],
                     threads: int) -> dict:
    """``platform`` from the machine's facts: cpu (model, architecture, 64-bit or not, logical CPUs), os
    (kernel, distribution, ram_gb), versions ((name, version) pairs, python first)."""
    return {"hardware": {"cpu": {"model": cpu["model"], "architecture": cpu["architecture"],
                                 "operation mode": cpu["operation_mode"], "number of cores": cpu["cores"],
                                 "threads used": threads},
                         "ram": None if os_facts["ram_gb"] is None else f"{os_facts['ram_gb']} GB"},
            "operating system": {"kernel": os_facts["kernel"], "distribution": os_facts["distribution"]},
            "software": {"libraries": {"python": [f"{n}=={v}" for n, v in versions]}}}
