"""A conclusion-retention record written by hand (the keys rerank_study.repro.retention_run.record writes),
for the tests of its Markdown (tests/unit/repro/test_retention_run.py) and of its row in the cross-study table
(tests/unit/report/test_cross_table.py)."""

REC = {
    "backend": "onnx-int8", "runs": ["t/dev", "i/dev"], "queries": ["1", "2", "3"],
    "conclusion": {
        "primary": "blend-ce", "metric": "ndcg@10",
        "reference": {"primary_mean": 0.25, "grouped_interval": [0.125, 0.375]},
        "other": {"primary_mean": 0.5, "grouped_interval": [0.25, 0.75]},
        "difference": {"mean": -0.0625, "grouped_interval": [-0.5, 0.25]},
        "verdicts_changed": ["blend-ce.grouped_covers_0", "guardrail ce-rrf.pass"],
        "conclusion_retained": False,
    },
    "agreement": {"kendall_tau_b": {"min": 0.5, "median": 0.75, "mean": 0.625},
                  "top10_overlap": {"min": 0.7, "median": 0.8, "mean": 0.85},
                  "max_abs_delta_logit": 0.0078125, "pairs_equal": 3, "pairs": 150},
}
