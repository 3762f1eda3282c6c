"""A derived file run by ONNX Runtime (rerank_study.reranker.backend_session) on a graph built here with
onnx.helper (no model): logits = sum over positions of (input_ids * attention_mask + token_type_ids), the
hidden state that product repeated on a fixed last axis of 4, so every expected value is arithmetic by hand.
That the derived files of a real model give its torch logits is tested in test_backends.py."""

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from rerank_study.reranker import backend_session

HIDDEN = 4


def tiny_graph() -> bytes:
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "token_type_ids", "attention_mask")]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", HIDDEN])]
    consts = [helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
              helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
              helper.make_tensor("wide", TensorProto.INT64, [3], [1, 1, HIDDEN])]
    nodes = [helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["ids", "mask"], ["masked"]),
             helper.make_node("Add", ["masked", "types"], ["summed"]),
             helper.make_node("ReduceSum", ["summed", "axis1"], ["logits"], keepdims=1),
             helper.make_node("Unsqueeze", ["masked", "axis2"], ["col"]),
             helper.make_node("Expand", ["col", "wide"], ["last_hidden_state"])]
    graph = helper.make_graph(nodes, "tiny", ints, outs, initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ort") / "model.onnx"
    path.write_bytes(tiny_graph())
    return path


IDS = torch.tensor([[1, 5, 2, 0], [1, 3, 4, 2]])
TYPES = torch.tensor([[0, 0, 1, 0], [0, 0, 1, 1]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])


def test_the_classifier_call_gives_float32_logits_by_hand(graph_file):
    model = backend_session.OrtClassifier(graph_file, threads=1)
    assert model.eval() is model and model.config.hidden_size == HIDDEN
    out = model(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK)
    # row 1: 1 + 5 + 2 + 0 (masked) + types 1 = 9; row 2: 1 + 3 + 4 + 2 + types 2 = 12
    assert out.logits.dtype == torch.float32 and out.logits.tolist() == [[9.0], [12.0]]
    assert out.hidden_states is None


def test_the_hidden_state_is_the_last_one_only_when_asked(graph_file):
    model = backend_session.OrtClassifier(graph_file.read_bytes(), threads=2)  # the verified bytes
    out = model(IDS, TYPES, MASK, output_hidden_states=True)
    (hidden,) = out.hidden_states
    assert tuple(hidden.shape) == (2, 4, HIDDEN)
    np.testing.assert_array_equal(hidden[..., 0].numpy(), np.array([[1, 5, 2, 0], [1, 3, 4, 2]], np.float32))
    assert bool((hidden == hidden[..., :1]).all())


def test_the_session_is_the_pinned_one_threads_granted_and_no_busy_waiting(graph_file):
    opts = backend_session.session(graph_file, threads=3).get_session_options()
    assert (opts.intra_op_num_threads, opts.inter_op_num_threads) == (3, 1)
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert str(opts.graph_optimization_level) == "GraphOptimizationLevel.ORT_ENABLE_ALL"
    assert str(opts.execution_mode) == "ExecutionMode.ORT_SEQUENTIAL"
    assert backend_session.session(graph_file, threads=1).get_providers() == ["CPUExecutionProvider"]
