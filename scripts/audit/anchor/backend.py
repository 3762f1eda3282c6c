"""A derived backend (``ce.backend``: ``onnx`` or ``onnx-int8``, docs/backends.md) as the audit sees it: the
ANCHOR names it (the committed config and the config files the run's invocation gave, or the frozen
protocol's scoring contract); the lock folder pins its file (``derived_pins.json`` -> ``backends.<backend>``,
the entry whose source is the run's model). ``torch``, the model itself, adds nothing to any record."""

from __future__ import annotations

import hashlib
from pathlib import Path

from core.compare import same_value
from core.problems import Unreadable
from expected.definitions import STANDIN
from read.readers import sha256_of

TORCH = "torch"
DERIVED = ("onnx", "onnx-int8")
# the scoring record's numerics of a derived backend (the pipeline's scoring.DERIVED_NUMERICS)
DERIVED_NUMERICS = (
    "ONNX Runtime CPU execution provider, ORT_ENABLE_ALL, sequential, one inter-op thread "
    "(intra-op thread count: speed only)"
)
# recorded beside the model's libraries by a derived backend's run
DERIVED_LIBRARIES = ("onnx", "onnxruntime")
# what a pin holds, no more and no less (docs/backends.md): another key is a record the audit cannot vouch for
PIN_KEYS = ("bytes", "file", "recipe", "sha256", "source")
RECIPE_KEYS = ("backend", "session", "steps", "versions")
SOURCE_KEYS = ("identity", "identity_sha256", "weights_sha256")
RECIPE_LIBRARIES = ("onnx", "onnxruntime", "torch", "transformers")  # the recipe's versions: the run's own
FILE = "model.onnx"
# the session the child runs the derived file with (the pipeline's backends.SESSION)
SESSION = {
    "graph_optimization_level": "ORT_ENABLE_ALL",
    "execution_mode": "ORT_SEQUENTIAL",
    "inter_op_num_threads": 1,
    "config_entries": {"session.intra_op.allow_spinning": "0"},
}


def backend_of(want) -> str:
    """The anchor's backend (``settings.backend``; absent: the model itself)."""
    return want.settings.get("backend", TORCH)


def derived_pin(want, model_identity: str) -> dict | None:
    """The lock folder's pin of the anchor's derived backend for the model ``model_identity`` (None:
    torch)."""
    name = backend_of(want)
    if name == TORCH:
        return None
    pins = (want.anchor.lock("derived_pins.json").get("backends") or {}).get(name) or {}
    found = [(k, p) for k, p in pins.items() if (p.get("source") or {}).get("identity") == model_identity]
    where = want.anchor.lockdir / "derived_pins.json"
    if len(found) != 1:
        raise Unreadable(where, f"must pin backend {name!r} of {model_identity} exactly once "
                                f"(backends.{name}); it pins it {len(found)} times")
    key, pin = found[0]
    arch = (want.anchor.lock("model_pins.json").get("cross_encoder") or {}).get("architecture") or {}
    problem = slot_problem(name, key, pin, arch)
    if problem is None and key != lock_identity_sha256(want, model_identity):  # how the pipeline finds it
        problem = (f"its key is not the identity sha256 of the model's pinned files in model_pins.json "
                   f"({lock_identity_sha256(want, model_identity)})")
    if problem:
        raise Unreadable(where, f"backends.{name}.{key}: {problem} (a pin must be of its slot)")
    return pin


def lock_identity_sha256(want, model_identity: str) -> str:
    """The identity sha256 of the run's model as the lock folder pins it - sha256 over the sorted lines
    'name NUL sha256 LF' of the pinned files (the STAND-IN's built files, or the pinned cross-encoder's, its
    '_' notes left out) - re-derived here, not read from a pin."""
    pins = want.anchor.lock("model_pins.json")
    block = pins.get("standin") if model_identity.startswith(f"{STANDIN}:") else pins.get("cross_encoder")
    files = {n: h for n, h in ((block or {}).get("files") or {}).items() if not n.startswith("_")}
    lines = "".join(f"{n}\0{h}\n" for n, h in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def documented_recipe(name: str, arch: dict) -> dict:
    """Backend ``name``'s recipe as docs/backends.md states it (every step with its arguments, the session),
    for a model of the pinned architecture ``arch`` (model_pins.json ``cross_encoder.architecture``)."""
    steps = [
        {"step": "export", "call": "torch.onnx.export", "exporter": "TorchScript (dynamo=False)", "opset": 17,
         "attention": "eager", "inputs": ["input_ids", "token_type_ids", "attention_mask"],
         "outputs": ["logits", "last_hidden_state"], "dynamic_axes": "batch, sequence"},
        {"step": "fusion", "call": "onnxruntime.transformers.optimizer.optimize_model", "model_type": "bert",
         "num_heads": arch.get("num_attention_heads"), "hidden_size": arch.get("hidden_size"),
         "opt_level": 0},
    ]
    if name == "onnx-int8":
        steps.append({"step": "quantisation", "call": "onnxruntime.quantization.quantize_dynamic",
                      "weight_type": "QInt8", "per_channel": True, "reduce_range": True,
                      "op_types_to_quantize": ["MatMul", "Attention"],
                      "activations": "uint8, per tensor, computed at run time"})
    session = {"provider": "CPUExecutionProvider", **SESSION,
               "intra_op_num_threads": "the threads granted (speed only)"}
    return {"backend": name, "steps": steps, "session": session}


def slot_problem(name: str, key: str, pin: dict, arch: dict) -> str | None:
    """Why a pin filed under backend ``name`` and key ``key`` is not of that slot: its recipe is another
    backend's, or not the documented recipe of that backend for the pinned architecture (every step with its
    arguments, the session: the record must say what made the file), or its key is not its source's identity
    sha256."""
    recipe, want = pin.get("recipe") or {}, documented_recipe(name, arch)
    steps = [s.get("step") for s in recipe.get("steps") or []]
    for what, found, allowed in (("pin", pin, PIN_KEYS), ("recipe", recipe, RECIPE_KEYS),
                                 ("source", pin.get("source") or {}, SOURCE_KEYS),
                                 ("recipe's versions", recipe.get("versions") or {}, RECIPE_LIBRARIES)):
        if sorted(found) != sorted(allowed):
            return f"its {what} holds {sorted(found)}, a pin holds exactly {sorted(allowed)}"
    if pin.get("file") != FILE:
        return f"its file is {pin.get('file')!r}, the recipe writes {FILE!r}"
    if recipe.get("backend") != name:
        return f"its recipe is backend {recipe.get('backend')!r}'s"
    if steps != [s["step"] for s in want["steps"]]:
        return f"its recipe's steps are {steps}, backend {name!r} has {[s['step'] for s in want['steps']]}"
    for fact in ("num_attention_heads", "hidden_size"):  # what the fusion step is made with
        if type(arch.get(fact)) is not int:
            return f"the pinned architecture's {fact} is {arch.get(fact)!r}, not a whole number"
    for got, documented in zip(recipe["steps"], want["steps"]):
        if not same_value(got, documented):
            return (f"its recipe's {documented['step']} step is {got}, the documented recipe's is "
                    f"{documented}")
    if not same_value(recipe.get("session"), want["session"]):
        return (f"its recipe's session is {recipe.get('session')}, the documented recipe's is "
                f"{want['session']}")
    if (pin.get("source") or {}).get("identity_sha256") != key:
        return f"its source's identity sha256 is {(pin.get('source') or {}).get('identity_sha256')}"
    return None


def run_records_agree(run, au, check: str, pin: dict) -> bool:
    """The pin is of the run's model (its weights, the manifest's) and its recipe's library versions are the
    ones the run scored with (measurements/scoring.json ``versions``: the pipeline checks them against the
    recipe before it scores), recorded in ``au``; check 'measurements' runs it on every derived run, with or
    without the re-inference stage."""
    weights, scored = run.manifest.get("model_weights_sha256"), run.measurements("scoring_measurements")
    source, versions = pin.get("source") or {}, (pin.get("recipe") or {}).get("versions") or {}
    ok = au.check(check, source.get("weights_sha256") == weights, str(run.manifest_path),
                  "the derived pin's source weights_sha256 (the manifest's model_weights_sha256)", weights,
                  source.get("weights_sha256"))
    run_versions = scored.get("versions") or {}
    for lib in RECIPE_LIBRARIES:
        ok &= au.check(check, versions.get(lib) == run_versions.get(lib),
                       str(run.path("scoring_measurements")), f"versions.{lib} (the derived pin's recipe)",
                       versions.get(lib), run_versions.get(lib))
    return ok


def scorer_identity(want, model_identity: str) -> str:
    """What scored: the model's identity, with the derived backend's name and pinned file sha256 after it."""
    pin = derived_pin(want, model_identity)
    return model_identity if pin is None else f"{model_identity} {backend_of(want)}:sha256:{pin['sha256']}"


def by_what(want) -> str:
    """What re-infers: upstream predict, or ONNX Runtime on the anchor's derived backend's file."""
    name = backend_of(want)
    return ("sentence_transformers.CrossEncoder.predict" if name == TORCH
            else f"ONNX Runtime, the derived file of backend {name!r}")


def derived_job(run, want, au, derived_file, check: str):
    """A derived backend's part of the re-inference job (its file, the pin's sha256, the session), None for
    the model itself, False when the file (``--derived-file``) is not given or is not the lock folder's pin
    (recorded in ``au`` under ``check``)."""
    pin = derived_pin(want, run.manifest.get("model_identity"))
    f = str(run.manifest_path)
    if pin is None:
        ok = au.check(check, derived_file is None, f, "--derived-file", "not given: the run's scorer is "
                      "the model itself (no derived backend in the anchor)", str(derived_file))
        return None if ok else False
    if not au.check(check, derived_file is not None, f, "--derived-file", "the derived file of backend "
                    f"{backend_of(want)!r} (the anchor's; docs/backends.md)", "not given"):
        return False
    path = Path(derived_file)
    found = sha256_of(path) if path.is_file() else "missing"
    if not au.check(check, found == pin["sha256"], str(path), f"sha256 (the lock folder's pin of backend "
                    f"{backend_of(want)!r})", pin["sha256"], found):
        return False
    size = path.stat().st_size
    if not au.check(check, type(pin.get("bytes")) is int and pin["bytes"] == size, str(path),
                    "size in bytes (the pin's bytes)", pin.get("bytes"), size):
        return False
    return {"backend": backend_of(want), "file": str(path.resolve()), "sha256": pin["sha256"],
            "session": SESSION}
