"""The first pins of a study's cross-encoder (``repin=model``), and the parse-time check of a ``model_dir``
against the pins a run uses.

``repin=model`` takes the files of ``study.reranker`` from a local folder (``model_dir``, pinned under the
``revision`` its user names), from a Hugging Face cache (``hf_cache``, or the default one) at ``revision``, or
from a download at ``revision`` (both resolve a branch or tag to the commit they point at, which is pinned),
and writes ``<lockdir>/model_pins.json`` in the format of ``lockfiles/model_pins.json`` (``cross_encoder``:
repo, revision, every file the scorer reads with its sha256 and size, the weights file, the architecture block
read from ``config.json``). It refuses to overwrite pins, and refuses a model the scorer cannot run, naming
what is missing (``scorer_problems``). Everything is checked at parse time, before any job
(``check_request``); the job (rule ``freeze_model``) repeats it and writes the pins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import layout
from ..core.errors import MissingInputError, PinMismatchError, PipelineError
from ..core.fileio import sha256_file
from .models import architecture_facts

WEIGHTS = "model.safetensors"
REQUIRED = ("config.json", WEIGHTS)
TOKENIZER_VOCABULARIES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model",
                          "spiece.model")
TOKENIZER_EXTRAS = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")
# every file the scorer may read (transformers' AutoTokenizer and AutoModelForSequenceClassification); a
# folder's other files (README.md, ONNX exports, pickled weights) are not read and not pinned
SCORER_FILES = REQUIRED + TOKENIZER_VOCABULARIES + TOKENIZER_EXTRAS


class ModelPinError(PipelineError):
    """repin=model cannot pin the model: the message names the file, the expected and found value, the fix."""


def _fail(study: str, path, expected: str, found: str, fix: str, what: str = "repin=model") -> None:
    raise ModelPinError(f"STUDY {study!r}: {what} refused (nothing was written)\n  file: {path}\n  expected: "
                        f"{expected}\n  found: {found}\n  fix: {fix}")


def activation(cfg: dict) -> str:
    """The model's configured activation as sentence-transformers reads it (``CrossEncoder.
    get_default_activation_fn``: ``sentence_transformers.activation_fn``, else the pre-4.0 key, else Sigmoid
    for one label and Identity otherwise); the scorer takes the raw logit whatever it is (a monotone
    activation changes no rank)."""
    path = ((cfg.get("sentence_transformers") or {}).get("activation_fn")
            or cfg.get("sbert_ce_default_activation_function"))
    if path:
        return str(path).rsplit(".", 1)[-1]
    return "Sigmoid" if architecture_facts(cfg)["num_labels"] == 1 else "Identity"


def architecture_block(cfg: dict) -> dict:
    """The pins' architecture block: the facts the shape check and the audit use, and the activation."""
    return {"activation": activation(cfg), **architecture_facts(cfg)}


def scorer_problems(folder: Path) -> list[str]:
    """What keeps the scorer (a transformers sequence classifier fed input_ids, token_type_ids and
    attention_mask, fp32, safetensors weights) from running the model in ``folder``: each missing file or
    fact, named."""
    out = [f"{n} is missing" + (" (pickled pytorch_model.bin weights are never loaded: convert them to "
                                "safetensors)"
                                if n == WEIGHTS and (folder / "pytorch_model.bin").is_file() else "")
           for n in REQUIRED if not (folder / n).is_file()]
    if not any((folder / n).is_file() for n in TOKENIZER_VOCABULARIES):
        out.append(f"no tokenizer vocabulary (one of {', '.join(TOKENIZER_VOCABULARIES)})")
    if not (folder / "config.json").is_file():
        return out
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return out + [f"config.json is not readable JSON ({exc})"]
    archs = cfg.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in archs):
        out.append(f"config.json architectures {archs} has no ...ForSequenceClassification (a "
                   "cross-encoder's head)")
    if "hidden_size" not in cfg:
        out.append("config.json has no hidden_size (the shape check needs it)")
    if int(cfg.get("type_vocab_size", 0) or 0) < 2:
        out.append(f"config.json type_vocab_size {cfg.get('type_vocab_size')} (model_type "
                   f"{cfg.get('model_type')}): the scorer feeds token_type_ids, a model without segment "
                   "embeddings cannot take them")
    return out


def model_pins(folder: Path, repo: str, revision: str, source: str) -> dict:
    """model_pins.json for the model files in ``folder`` (checked by ``scorer_problems`` first)."""
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    names = sorted(n for n in SCORER_FILES if (folder / n).is_file())
    files = {n: {"bytes": (folder / n).stat().st_size, "sha256": sha256_file(folder / n)} for n in names}
    return {"_comment": f"Pins of {repo} @ {revision} written by repin=model from {source}: every file the "
                        f"scorer reads ({', '.join(names)}) with its size and sha256; the architecture block "
                        "read from its config.json (num_labels as transformers reads it: len(id2label)).",
            "cross_encoder": {"architecture": architecture_block(cfg), "files": files, "repo": repo,
                              "revision": revision, "weights": WEIGHTS}}


# ------------------------------------------------------------------------- where the files come from --
def cache_folder(hf_cache: str | None, repo: str) -> Path:
    """The hub cache's folder of ``repo`` (``models--<org>--<name>``)."""
    if not hf_cache:
        from huggingface_hub import constants

        hf_cache = constants.HF_HUB_CACHE
    return Path(hf_cache) / f"models--{repo.replace('/', '--')}"


def cached_revisions(folder: Path) -> list[str]:
    """What a cache folder holds: its refs (name -> commit) and its snapshots (commits)."""
    refs = (sorted(p for p in (folder / "refs").rglob("*") if p.is_file()) if (folder / "refs").is_dir()
            else [])
    snaps = (sorted(p.name for p in (folder / "snapshots").iterdir()) if (folder / "snapshots").is_dir()
             else [])
    return ([f"ref {p.relative_to(folder / 'refs').as_posix()} -> {p.read_text().strip()}" for p in refs]
            + [f"snapshot {s}" for s in snaps])


def _snapshot(repo: str, revision: str, hf_cache: str | None, local_only: bool) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=repo, revision=revision, cache_dir=hf_cache or None,
                                  local_files_only=local_only, allow_patterns=list(SCORER_FILES)))


def from_hub(study: str, repo: str, revision: str, hf_cache: str | None) -> tuple[Path, str, str]:
    """(snapshot folder, its commit, source) from the cache at ``revision``, else a download of it; a revision
    neither has stops, naming what the cache holds."""
    try:
        folder = _snapshot(repo, revision, hf_cache, local_only=True)
        return folder, folder.name, f"Hugging Face cache {cache_folder(hf_cache, repo)} ({revision})"
    except Exception as exc:  # noqa: BLE001 - every failure is reported below
        cache_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    download_error = "not tried (HF_HUB_OFFLINE is set)"
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("1", "true", "True", "yes"):
        try:
            folder = _snapshot(repo, revision, hf_cache, local_only=False)
            return folder, folder.name, f"download {repo} ({revision})"
        except Exception as exc:  # noqa: BLE001
            download_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    held = cached_revisions(cache_folder(hf_cache, repo))
    _fail(study, cache_folder(hf_cache, repo),
          f"revision {revision!r} of {repo} (a ref name or a snapshot commit)",
          f"the cache holds {', '.join(held) if held else 'nothing of this repository'} ({cache_error}); "
          f"download: {download_error}",
          "name a revision the cache holds (revision=...), or fetch it where the hub is reachable "
          f"(huggingface-cli download {repo} --revision {revision}) and copy the cache here (hf_cache=...), "
          "or give model_dir=<folder>")
    raise AssertionError("unreachable")


def locate(cfg: dict) -> tuple[Path, str, str]:
    """(folder, revision to pin, source) of ``study.reranker`` for repin=model."""
    st, revision = cfg["study"], cfg["revision"]
    if not revision:
        _fail(st["name"], cfg["model_dir"] or cache_folder(cfg["hf_cache"], st["reranker"]),
              "revision=<the commit, branch or tag of the files>", "revision not set",
              "add --config revision=<commit or tag> (with model_dir: the revision its files are)")
    if not cfg["model_dir"]:
        return from_hub(st["name"], st["reranker"], revision, cfg["hf_cache"])
    folder = Path(cfg["model_dir"])
    if not folder.is_dir():
        _fail(st["name"], folder, "a folder with the model's files", "no such folder",
              "give model_dir=<its folder>")
    return folder, revision, f"local folder {folder}"


def check_request(cfg: dict, lockdir) -> tuple[Path, str, str]:
    """repin=model at parse time: no pins yet, the model found, and runnable by the scorer."""
    st, path = cfg["study"], Path(lockdir) / layout.MODEL_PINS
    if path.is_file():
        _fail(st["name"], path, "no model pins yet (repin=model writes them once)", "the file exists",
              "keep the pins (drop repin=model), or delete the file knowingly, in its own commit, to re-pin")
    folder, revision, source = locate(cfg)
    problems = scorer_problems(folder)
    if problems:
        _fail(st["name"], folder,
              f"a sequence-classification model the scorer can run ({', '.join(REQUIRED)}, a "
              "tokenizer vocabulary, token type ids)", "; ".join(problems),
              "pin a model with those files (a cross-encoder in safetensors), or use its run file instead "
              "(study.reranker_kind: run)")
    return folder, revision, source


def check_model_dir(cfg: dict, ce_pins: dict) -> None:
    """A ``model_dir`` a run is given holds the pinned files (checked before any job)."""
    from .models import verify_files

    st, folder = cfg["study"], Path(cfg["model_dir"])
    fix = (f"point model_dir at the files of {ce_pins['repo']} @ {ce_pins['revision']} (in a study file: its "
           "own model_dir; a command-line model_dir applies to every study that does not set one), or pin "
           "this model in a new study (repin=model)")
    try:
        verify_files(folder, ce_pins["files"], ce_pins["repo"], f"model_dir {folder}", fix=fix)
    except (PinMismatchError, MissingInputError) as exc:
        raise ModelPinError(f"STUDY {st['name']!r}: model_dir={folder} is not the pinned model (checked "
                            f"before any job).\n{exc}") from None

