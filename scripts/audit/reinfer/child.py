"""The auditor's re-inference process (check 'reinfer' of reinfer.stage starts it; never imported by the
audit).

    python -I -B scripts/audit/reinfer/child.py AUDIT_PID < job.json > answer.json

The ONE module of the audit that is not standard library only: it needs torch and sentence-transformers, so it
runs in a process of its own with the environment's python (the audit itself runs with -I -S). It imports
nothing of the project and nothing of the audit: it scores with UPSTREAM
``sentence_transformers.CrossEncoder.predict``.

Job (stdin, JSON): ``model_dir``, ``files`` (each model file the audit verified, with its sha256),
``derived`` (a derived backend's file, its pinned sha256 and session, or null: ``derived_scorer`` runs it with
ONNX Runtime instead of ``predict``, and ``rederive`` makes that file again from the model by the recipe:
its sha256 is reported as ``facts.derived.rederived_sha256``),
``threads``, ``max_length``, ``label_index`` (the relevance logit of a several-output model, or null) and
``batches``: each a list of [query text, document text] pairs. The model is loaded from ``model_dir``;
each listed file is hashed when the model is loaded and the sha256 reported (``facts.model_files``), with the
interpreter that ran (``facts.python``: its resolved path and version). The process exits when the audit that
started it is gone. Each batch
is ONE ``predict(batch, batch_size=len(batch), activation_fn=Identity())`` call: one forward of exactly that
composition, the raw logits. Answer (stdout, one JSON line): ``bits``, per batch the float32 bit patterns of
its logits (big-endian hex), and ``facts`` (library versions, CPU capability, oneMKL's own report of its
numeric mode, the model's configured activation, seconds).

The numeric mode (oneMKL strict CNR: MKL_CBWR=AUTO,STRICT, MKL_DYNAMIC=FALSE, OMP_DYNAMIC=FALSE, the scoring
contract of docs/scoring.md) is put into the environment BEFORE torch is imported (MKL reads it at its first
call) and then read back from MKL itself (``mkl_serv_cbwr_get``, exported by torch's bundled oneMKL).
"""

import ctypes
import os
import signal
import sys

# first of all, before the slow imports: die with the audit (Linux PR_SET_PDEATHSIG), and exit at once when
# the audit that started this process (its pid in argv) is already gone
if __name__ == "__main__":  # the process the audit starts (a test may import the module)
    if sys.platform.startswith("linux") and ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0:
        sys.stderr.write(f"reinfer.py: prctl(PR_SET_PDEATHSIG) failed (errno {ctypes.get_errno()}): this "
                         "process may outlive the audit\n")
    if len(sys.argv) > 1 and os.getppid() != int(sys.argv[1]):
        sys.stderr.write(f"reinfer.py: the audit (pid {sys.argv[1]}) is not this process's parent (pid "
                         f"{os.getppid()}): the audit is gone, or --reinfer-python is a wrapper that does "
                         "not exec python (give the interpreter itself)\n")
        sys.stderr.flush()
        os._exit(3)

os.environ.update({"MKL_CBWR": "AUTO,STRICT", "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE",
                   "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})

import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

# mkl.h: branch codes (low bits) and MKL_CBWR_STRICT
CBWR_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 10: "AVX2", 12: "AVX512"}
CBWR_STRICT = 0x10000


def mkl_cnr() -> str:
    """oneMKL's report of its numeric mode, e.g. AUTO,STRICT ("unknown" when torch has no queryable MKL)."""
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        get = lib.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return "unknown"
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    code = get(-1)  # MKL_CBWR_ALL
    name = CBWR_BRANCHES.get(code & 0xFFFF, f"code {code & 0xFFFF}")
    return name + (",STRICT" if code & CBWR_STRICT else "")


def relevance(scores: np.ndarray, label_index) -> np.ndarray:
    """The relevance logit column: the only one, or the declared label index."""
    if scores.ndim == 1:
        return scores
    if label_index is None and scores.shape[1] != 1:
        raise SystemExit(f"logits of shape {list(scores.shape)} and no label index")
    return scores[:, 0 if label_index is None else label_index]


def exit_with_parent(parent: int) -> None:
    """Exit at once when the audit that started this process is gone (it is re-parented)."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def loaded_files(model_dir: str, files: dict) -> dict:
    """name -> sha256 of each listed model file as it is when the model is loaded."""
    return {name: hashlib.sha256((Path(model_dir) / name).read_bytes()).hexdigest() for name in sorted(files)}


def interpreter() -> dict:
    """The python that runs this process: its resolved path and version."""
    return {"python": os.path.realpath(sys.executable), "version": platform.python_version()}


def float32_bits(scores: np.ndarray, label_index) -> list[str]:
    """The relevance logits' float32 bit patterns (big-endian hex)."""
    raw = relevance(np.asarray(scores), label_index).astype(">f4").tobytes()
    return [raw[i:i + 4].hex() for i in range(0, len(raw), 4)]


def upstream_scorer(folder: Path, job: dict):
    """sentence-transformers' CrossEncoder on the model folder: each batch ONE predict call."""
    from sentence_transformers import CrossEncoder

    ce = CrossEncoder(str(folder), device="cpu", max_length=job["max_length"])

    def score(batch):
        return ce.predict(batch, batch_size=len(batch), activation_fn=torch.nn.Identity(),
                          show_progress_bar=False, convert_to_numpy=True)

    facts = {"model_activation": type(ce.activation_fn).__name__, "max_length": ce.max_length,
             "predict": "CrossEncoder.predict(batch, batch_size=len(batch), "
                        "activation_fn=torch.nn.Identity())"}
    return score, facts


def derived_scorer(folder: Path, job: dict, derived: Path):
    """A derived backend's file (docs/backends.md) run by ONNX Runtime with the pinned session, each batch as
    ``predict`` forms it: rows longest first by characters (numpy.argsort of minus the pair's characters), the
    tokenizer's joint call padded to the longest, the logits mapped back to the batch's order."""
    import onnxruntime as ort
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = int(job["threads"]), 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    entries = {"session.intra_op.allow_spinning": "0"}
    for key, value in entries.items():
        opts.add_session_config_entry(key, value)
    session = ort.InferenceSession(str(derived), opts, providers=["CPUExecutionProvider"])

    def score(batch):
        order = np.argsort([-(len(q) + len(d)) for q, d in batch])
        enc = tok([batch[i][0] for i in order], [batch[i][1] for i in order], padding=True,
                  truncation="longest_first", max_length=job["max_length"], return_tensors="np")
        feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "token_type_ids", "attention_mask")}
        logits = session.run(["logits"], feed)[0]
        out = np.empty_like(logits)
        out[order] = logits
        return out

    ran = {"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "ORT_SEQUENTIAL",
           "inter_op_num_threads": 1,
           "config_entries": {k: opts.get_session_config_entry(k) for k in entries}}
    facts = {"onnxruntime": ort.__version__, "max_length": job["max_length"],
             "derived": {"sha256": hashlib.sha256(derived.read_bytes()).hexdigest(), "session": ran},
             "predict": "onnxruntime.InferenceSession.run on predict's batch (rows longest first by "
                        "characters, joint tokenizer call padded to the longest)"}
    return score, facts


# the documented recipe (docs/backends.md), written here a second time so that the pipeline's derivation is
# checked by another: the same library calls, the same arguments
RECIPE_OPSET = 17
RECIPE_INPUTS = ("input_ids", "token_type_ids", "attention_mask")
RECIPE_OUTPUTS = ("logits", "last_hidden_state")
RECIPE_EXAMPLE = (["a query", "a second query"], ["a document", "another document text"])


def rederive(folder: Path, backend: str, out_dir: Path) -> str:
    """The derived file made again from the verified source folder by the recipe
    (TorchScript export, ONNX Runtime's BERT fusion at level 0, int8 dynamic quantisation for onnx-int8);
    its sha256. Equal to the pin: the pinned file is what the recipe makes of THIS model."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    class WithHidden(torch.nn.Module):  # the export's module: attribute 'inner' (the graph's node names)
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, token_type_ids, attention_mask):
            out = self.inner(input_ids=input_ids, token_type_ids=token_type_ids,
                             attention_mask=attention_mask, output_hidden_states=True)
            return out.logits, out.hidden_states[-1]

    model = AutoModelForSequenceClassification.from_pretrained(
        str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    enc = AutoTokenizer.from_pretrained(str(folder))(*RECIPE_EXAMPLE, padding=True, return_tensors="pt")
    axes = {0: "batch", 1: "sequence"}
    exported, fused, int8 = (out_dir / n for n in ("exported.onnx", "fused.onnx", "int8.onnx"))
    with torch.no_grad():
        torch.onnx.export(WithHidden(model), tuple(enc[k] for k in RECIPE_INPUTS), str(exported),
                          input_names=list(RECIPE_INPUTS), output_names=list(RECIPE_OUTPUTS),
                          opset_version=RECIPE_OPSET, dynamo=False,
                          dynamic_axes={**{k: axes for k in RECIPE_INPUTS}, "logits": {0: "batch"},
                                        "last_hidden_state": axes})
    cfg = model.config
    optimizer.optimize_model(str(exported), model_type="bert", num_heads=cfg.num_attention_heads,
                             hidden_size=cfg.hidden_size, opt_level=0,
                             use_gpu=False).save_model_to_file(str(fused))
    out = fused
    if backend == "onnx-int8":
        import onnx

        quantize_dynamic(str(fused), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True, op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        out = int8
    elif backend != "onnx":
        raise SystemExit(f"backend {backend!r}: no recipe (onnx, onnx-int8)")
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> int:
    exit_with_parent(os.getppid())
    job = json.loads(sys.stdin.read())
    t0 = time.perf_counter()
    torch.set_num_threads(int(job["threads"]))
    import sentence_transformers
    import transformers

    folder = Path(job["model_dir"])
    files = loaded_files(job["model_dir"], job["files"])
    if job.get("derived"):  # the derived file, run with ONNX Runtime, and made again by the recipe
        score, facts = derived_scorer(folder, job, Path(job["derived"]["file"]))
        work = Path(tempfile.mkdtemp(prefix="audit-rederive-"))
        try:
            facts["derived"]["rederived_sha256"] = rederive(folder, job["derived"]["backend"], work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    else:
        score, facts = upstream_scorer(folder, job)
    loaded = time.perf_counter()
    bits = [float32_bits(score(batch), job["label_index"]) for batch in job["batches"]]
    facts.update({"torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__,
                  "transformers": transformers.__version__, "numpy": np.__version__,
                  "cpu_capability": torch.backends.cpu.get_cpu_capability(), "mkl_cnr": mkl_cnr(),
                  "threads": torch.get_num_threads(), "model_files": files, "python": interpreter(),
                  "load_seconds": round(loaded - t0, 3),
                  "inference_seconds": round(time.perf_counter() - loaded, 3)})
    print(json.dumps({"bits": bits, "facts": facts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
