"""A derived backend's file run by ONNX Runtime (docs/backends.md): the session with the recipe's fixed
settings (``backends.SESSION``), and the file behind the sequence classifier's call, so that the scoring and
the shape check run it as they run the torch model."""

from __future__ import annotations

from types import SimpleNamespace

from .backends import INPUTS, OUTPUTS, SESSION


def session(model, threads: int):
    """An ONNX Runtime session of the derived file (its verified bytes, or a path) with the recipe's
    settings."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = SESSION["inter_op_num_threads"]
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    for key, value in SESSION["config_entries"].items():
        opts.add_session_config_entry(key, value)
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, opts, providers=[SESSION["provider"]])


class OrtClassifier:
    """A derived file behind the sequence classifier's call: ``model(input_ids=..., token_type_ids=...,
    attention_mask=..., output_hidden_states=...)`` with torch tensors gives ``.logits`` (float32) and,
    when asked, ``.hidden_states`` (the last one only, which is all the shape check reads)."""

    def __init__(self, model, threads: int, relevance_index: int | None = None):
        self.session, self.relevance_index = session(model, threads), relevance_index
        # what the file says of itself (the shape check compares it): its hidden state's fixed last axis
        hidden = next(o for o in self.session.get_outputs() if o.name == "last_hidden_state")
        self.config = SimpleNamespace(hidden_size=hidden.shape[-1])

    def eval(self):
        return self

    def __call__(self, input_ids, token_type_ids, attention_mask, output_hidden_states: bool = False):
        import numpy as np
        import torch

        feed = {
            k: np.ascontiguousarray(v.numpy(), dtype=np.int64)
            for k, v in zip(INPUTS, (input_ids, token_type_ids, attention_mask))
        }
        logits, hidden = self.session.run(list(OUTPUTS), feed)
        return SimpleNamespace(
            logits=torch.from_numpy(logits),
            hidden_states=(torch.from_numpy(hidden),) if output_hidden_states else None,
        )
