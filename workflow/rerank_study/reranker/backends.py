"""Derived rerankers: a verified cross-encoder folder exported to ONNX and run by ONNX Runtime in fp32
(``onnx``), or that export quantised to dynamic int8 (``onnx-int8``). ``torch`` is the model itself.

A derived file is made by a RECIPE (``recipe``: the exporter, the opset, the fusion, the quantisation, the
runtime's session settings and the versions of every library that writes or runs it) from a SOURCE (the
verified folder's identity) and pinned by the sha256 of the file it produces (``pin_entry``). Every step is
deterministic (measured: the same bytes from two processes, for the stand-in and the test suite's tiny
reranker), so the file can be made again on any machine and must then equal its pin (``verify_derived``);
it is never used unverified. A runtime whose versions differ from the recipe's stops before scoring
(``check_versions``): another exporter or quantiser writes other bytes, another runtime may compute others.

Steps (``derive``), each one library call:

1. export: ``torch.onnx.export`` (the TorchScript exporter, ``dynamo=False``), opset ``OPSET``, eager
   attention, inputs ``input_ids``, ``token_type_ids``, ``attention_mask`` with dynamic batch and sequence
   axes, outputs ``logits`` and ``last_hidden_state`` (the shape check's);
2. fusion: ``onnxruntime.transformers.optimizer.optimize_model`` (BERT: embedding, attention, GELU and
   skip-layer-norm fusion, ``opt_level`` 0: the graph is then optimised by the session at load);
3. ``onnx-int8`` only: ``onnxruntime.quantization.quantize_dynamic``: int8 weights per output channel,
   uint8 activations quantised per tensor at run time, of the MatMul and Attention nodes.

The session (``backend_session.session``): CPU execution provider, ``ORT_ENABLE_ALL``, sequential execution,
one inter-op thread and ``threads`` intra-op threads (speed only: the logits are bit-identical at 1, 2 and 4
threads and across repeated runs in one process, measured by ``bench.py backends`` and tested).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import PipelineError
from ..core.fileio import json_equal, read_json, sha256_bytes, sha256_file, write_json
from ..core.names import TORCH_BACKEND
from .models import check_architecture, load_model_meta

TORCH = TORCH_BACKEND
BACKENDS = (TORCH, "onnx", "onnx-int8")
DERIVED = BACKENDS[1:]
FILE = "model.onnx"
OPSET = 17
EXPORTABLE = ("BertForSequenceClassification",)  # what the BERT fusion and the export's inputs assume
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
OUTPUTS = ("logits", "last_hidden_state")
RECIPE_LIBRARIES = ("torch", "transformers", "onnx", "onnxruntime")
PIN_KEYS = ("bytes", "file", "recipe", "sha256", "source")  # a pin holds these, no more
RECIPE_KEYS = ("backend", "session", "steps", "versions")


class BackendError(PipelineError):
    """A derived reranker cannot be made, is not its pin, or would run under another recipe."""


def runtime_versions() -> dict:
    """The versions of every library that writes or runs a derived file."""
    import onnx
    import onnxruntime
    import torch
    import transformers

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def recipe(backend: str, arch: Mapping) -> dict:
    """How ``backend`` is made from a model of architecture ``arch`` (model_pins' architecture block)."""
    check_exportable(backend, arch)
    steps = [
        {
            "step": "export",
            "call": "torch.onnx.export",
            "exporter": "TorchScript (dynamo=False)",
            "opset": OPSET,
            "attention": "eager",
            "inputs": list(INPUTS),
            "outputs": list(OUTPUTS),
            "dynamic_axes": "batch, sequence",
        },
        {
            "step": "fusion",
            "call": "onnxruntime.transformers.optimizer.optimize_model",
            "model_type": "bert",
            "num_heads": arch["num_attention_heads"],
            "hidden_size": arch["hidden_size"],
            "opt_level": 0,
        },
    ]
    if backend == "onnx-int8":
        steps.append(
            {
                "step": "quantisation",
                "call": "onnxruntime.quantization.quantize_dynamic",
                "weight_type": "QInt8",
                "per_channel": True,
                "reduce_range": True,
                "op_types_to_quantize": ["MatMul", "Attention"],
                "activations": "uint8, per tensor, computed at run time",
            }
        )
    return {"backend": backend, "steps": steps, "session": SESSION, "versions": runtime_versions()}


SESSION = {
    "provider": "CPUExecutionProvider",
    "graph_optimization_level": "ORT_ENABLE_ALL",
    "execution_mode": "ORT_SEQUENTIAL",
    "inter_op_num_threads": 1,
    "intra_op_num_threads": "the threads granted (speed only)",
    # ONNX Runtime's session config entries (speed only): no busy-waiting between ops, which on a machine with
    # fewer cores than the granted threads made onnx-int8 no faster than torch (docs/backends.md)
    "config_entries": {"session.intra_op.allow_spinning": "0"},
}


def check_exportable(backend: str, arch: Mapping) -> None:
    """Stop, naming the architecture and the fix, unless ``backend`` can be derived from it."""
    if backend not in DERIVED:
        raise BackendError(
            f"UNKNOWN BACKEND {backend!r}: a derived reranker is one of {list(DERIVED)} "
            f"({TORCH!r} is the model itself)."
        )
    found = list(arch.get("architectures") or [])
    if not found or not set(found) <= set(EXPORTABLE):
        raise BackendError(
            f"BACKEND {backend!r} CANNOT EXPORT architecture {found}: the export feeds "
            f"{list(INPUTS)} and the fusion is BERT's; only {list(EXPORTABLE)} is supported. "
            f"Fix: score this model with backend {TORCH!r}."
        )


def check_versions(pin: Mapping, what: str) -> None:
    """The installed libraries must be the recipe's (another version writes or computes other bytes)."""
    found, want = runtime_versions(), pin["recipe"]["versions"]
    for lib in RECIPE_LIBRARIES:
        if found.get(lib) != want.get(lib):
            raise BackendError(
                f"RUNTIME VERSION DIFFERS FROM THE RECIPE of {what}: {lib} is {found.get(lib)}, "
                f"the recipe was made with {want.get(lib)}. Fix: install the locked versions "
                "(python3.11 scripts/setup_env.py), or re-pin the backend with these libraries "
                "(a new recipe is a new reranker)."
            )


def verify_derived(path, pin: Mapping, pins_path) -> bytes:
    """The derived file read ONCE; its sha256 must be its pin's; returns the bytes that were hashed (what is
    then loaded: the file is never opened again)."""
    data = Path(path).read_bytes() if Path(path).is_file() else None
    found = "missing" if data is None else sha256_bytes(data)
    if found != pin["sha256"]:
        raise BackendError(
            f"DERIVED FILE DIFFERS FROM ITS PIN: {path}\n  sha256 expected: {pin['sha256']} "
            f"({pins_path})\n  sha256 actual:   {found}\n  fix: delete {path} and rerun (it is "
            "made again by the pinned recipe); if it differs again, this machine's libraries do "
            "not reproduce the recipe: nothing was scored with it."
        )
    return data


def pin_of(pins: Mapping, backend: str, source_identity_sha256: str, pins_path) -> dict:
    """The pin of ``backend`` derived from the source whose identity sha256 is given."""
    pin = ((pins.get("backends") or {}).get(backend) or {}).get(source_identity_sha256)
    if pin is None:
        raise BackendError(
            f"NO PIN for backend {backend!r} of the model with identity sha256 "
            f"{source_identity_sha256} in {pins_path} (backends.{backend}). Fix: pin it once "
            f"with repin=backend (the file's sha256 and its recipe are then committed)."
        )
    return dict(pin)


def check_slot(pin: Mapping, backend: str, meta: Mapping, arch: Mapping, pins_path) -> None:
    """A pin must be what its slot says: made from THIS model (its source) by THIS backend's recipe for this
    architecture (every step, the session; the versions are check_versions'), of the file name the recipe
    writes."""
    want, found = recipe(backend, arch), pin.get("recipe") or {}
    source = {k: meta[k] for k in ("identity", "identity_sha256", "weights_sha256")}
    problems = [f"{key}: pinned {found.get(key)!r}, this slot's recipe gives {want[key]!r}"
                for key in ("backend", "steps", "session") if not json_equal(found.get(key), want[key])]
    if not json_equal(pin.get("source"), source):
        problems.append(f"source: pinned {pin.get('source')}, the model is {source}")
    if pin.get("file") != FILE:
        problems.append(f"file: pinned {pin.get('file')!r}, the recipe writes {FILE!r}")
    if type(pin.get("bytes")) is not int or pin["bytes"] <= 0:
        problems.append(f"bytes: pinned {pin.get('bytes')!r}, a pin holds the file's size (a whole number)")
    for what, keys, allowed in (("pin", pin, PIN_KEYS), ("recipe", found, RECIPE_KEYS),
                                ("recipe versions", found.get("versions") or {}, RECIPE_LIBRARIES)):
        if sorted(keys) != sorted(allowed):
            problems.append(f"{what} keys: pinned {sorted(keys)}, a pin of the recipe has {sorted(allowed)}")
    if problems:
        raise BackendError(f"PIN NOT OF ITS SLOT: {pins_path} backends.{backend}.{meta['identity_sha256']}:"
                           "\n  " + "\n  ".join(problems) + "\n  fix: restore the committed lock folder, or "
                           "re-pin with repin=backend (the entry is then made by the recipe).")


def pin_entry(backend: str, source_meta: Mapping, arch: Mapping, path) -> dict:
    """The pin of a derived file just made from the verified folder described by ``source_meta``."""
    return {
        "source": {
            "identity": source_meta["identity"],
            "identity_sha256": source_meta["identity_sha256"],
            "weights_sha256": source_meta["weights_sha256"],
        },
        "recipe": recipe(backend, arch),
        "file": FILE,
        "sha256": sha256_file(path),
        "bytes": Path(path).stat().st_size,
    }


def ready(model_dir, backend: str, arch: Mapping, pins_path, dest) -> tuple[bytes, str]:
    """The verified derived file of ``backend`` for the verified folder ``model_dir`` (its bytes, read once)
    and its sha256: its pin found and of its slot, the libraries checked against the recipe, the file made
    into ``dest`` when absent (by the recipe, never without its pin) and its sha256 checked against the pin.
    Everything before scoring."""
    meta = load_model_meta(model_dir)
    check_architecture({"architecture": arch}, model_dir, meta["identity"])  # the recipe's num_heads, ...
    pin = pin_of(read_json(pins_path), backend, meta["identity_sha256"], pins_path)
    check_slot(pin, backend, meta, arch, pins_path)  # first: a pin of another slot says so
    check_versions(pin, f"backend {backend!r} of {meta['identity']} ({pins_path})")
    if not Path(dest).is_file():
        derive(model_dir, backend, arch, dest)
    return verify_derived(dest, pin, pins_path), pin["sha256"]


def scorer_identity(meta: Mapping, backend: str = TORCH_BACKEND, derived_sha256: str | None = None) -> str:
    """What scored: the model's identity, with a derived backend's name and file sha256 after it."""
    if backend == TORCH_BACKEND:
        return meta["identity"]
    return f"{meta['identity']} {backend}:sha256:{derived_sha256}"


def scorer_of(rule_input, settings, model_dir, meta: Mapping) -> tuple[bytes | None, str]:
    """(the verified derived file's bytes or None, the scorer's identity) of a scoring rule: a derived
    backend's file
    (input ``backend_model``) is checked against its pin (``derived_pins``) and its recipe's library versions
    before anything is scored; the architecture is the pinned one (``model_pins``)."""
    if not settings.derived:
        return None, scorer_identity(meta)
    arch = read_json(rule_input.model_pins)["cross_encoder"]["architecture"]
    data, sha = ready(model_dir, settings.backend, arch, rule_input.derived_pins, rule_input.backend_model)
    return data, scorer_identity(meta, settings.backend, sha)


def pinned_identity(settings, meta: Mapping, pins_path) -> str:
    """The scorer's identity by the pins alone (the gather: the derived file's sha256 is its pin's)."""
    if not settings.derived:
        return scorer_identity(meta)
    sha = pin_of(read_json(pins_path), settings.backend, meta["identity_sha256"], pins_path)["sha256"]
    return scorer_identity(meta, settings.backend, sha)


def pin_into(pins_path, backend: str, model_dir, arch: Mapping) -> dict:
    """Make ``backend``'s file from the verified folder and write its pin into ``pins_path`` (under
    ``backends.<backend>.<source identity sha256>``); an existing pin is never overwritten."""
    meta = load_model_meta(model_dir)
    check_architecture({"architecture": arch}, model_dir, meta["identity"])
    pins = read_json(pins_path)
    if meta["identity_sha256"] in (pins.get("backends") or {}).get(backend, {}):
        raise BackendError(
            f"{pins_path} already pins backend {backend!r} of {meta['identity']}: a pin is never "
            "overwritten (delete the entry by hand, knowingly, to re-pin)."
        )
    with tempfile.TemporaryDirectory(prefix="derive-") as tmp:
        entry = pin_entry(backend, meta, arch, derive(model_dir, backend, arch, Path(tmp) / FILE))
    pins.setdefault("backends", {}).setdefault(backend, {})[meta["identity_sha256"]] = entry
    write_json(pins_path, pins)
    return entry


# ------------------------------------------------------------------------------------ making one --
def derive(model_dir, backend: str, arch: Mapping, dest) -> Path:
    """Make ``backend``'s file from the verified folder ``model_dir`` (written atomically to ``dest``)."""
    check_exportable(backend, arch)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".derive-") as tmp:
        exported, fused = Path(tmp) / "exported.onnx", Path(tmp) / "fused.onnx"
        _export(model_dir, exported)
        _fuse(exported, fused, arch)
        out = fused
        if backend == "onnx-int8":
            out = Path(tmp) / "int8.onnx"
            _quantise(fused, out)
        os.replace(out, dest)
    return dest


def _export(model_dir, out: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), dtype=torch.float32, attn_implementation="eager"
    ).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    enc = tok(
        ["a query", "a second query"],
        ["a document", "another document text"],
        padding=True,
        return_tensors="pt",
    )
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            _WithHidden(model),
            tuple(enc[k] for k in INPUTS),
            str(out),
            input_names=list(INPUTS),
            output_names=list(OUTPUTS),
            opset_version=OPSET,
            dynamo=False,
            dynamic_axes={**{k: axes for k in INPUTS}, "logits": {0: "batch"}, "last_hidden_state": axes},
        )


def _fuse(src: Path, out: Path, arch: Mapping) -> None:
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(src),
        model_type="bert",
        num_heads=arch["num_attention_heads"],
        hidden_size=arch["hidden_size"],
        opt_level=0,
        use_gpu=False,
    )
    fused.save_model_to_file(str(out))


def _quantise(src: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,  # 7-bit weights: no u8 x s7 pair sum saturates on AVX2 (docs/backends.md)
        op_types_to_quantize=["MatMul", "Attention"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


class _WithHidden:
    """The classifier's logits and last hidden state (what the export writes as its two outputs)."""

    def __new__(cls, model):
        import torch

        class WithHidden(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, token_type_ids, attention_mask):
                out = self.inner(
                    input_ids=input_ids,
                    token_type_ids=token_type_ids,
                    attention_mask=attention_mask,
                    output_hidden_states=True,
                )
                return out.logits, out.hidden_states[-1]

        return WithHidden(model)
