"""The reproducibility measures of a whole run (rerank_study.repro.repro_aggregate.measure_reproduction)
against hand calculation and independent implementations (exact fractions; tests/independent_repro.py),
never against the module itself. The measures one by one are tested in test_repro_measures.py.

Reference run = original (o), new run = reproduction (r)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from independent_repro import (  # written independently of the module under test
    exact_band,
    exact_dri,
    exact_er,
    exact_mean,
    exact_nrmse,
    exact_rmse,
    scipy_ktu,
    webber_rbo_ext,
)
from test_repro_measures import O_CE, O_RRF, R_CE, R_RRF, TINY_O_RANK, TINY_R_RANK

from rerank_study.rankings.ranking import order_by_score
from rerank_study.repro import repro_aggregate as ra
from rerank_study.stats.metrics import ndcg_at

# --------------------------------------------------------------------- the tiny example --
# test_repro_measures.py's tiny example: three queries, two methods (a = ce, b = rrf), 3-4 documents.


def tiny_run(values_ce, values_rrf, rank):
    return {"values": {"ce": values_ce, "rrf": values_rrf},
            "rankings": {"ce": rank, "rrf": TINY_O_RANK},
            "deltas": {"ce-rrf": {q: values_ce[q] - values_rrf[q] for q in values_ce}}}


def test_tiny_aggregate_is_json_and_says_what_failed():
    res = ra.measure_reproduction(tiny_run(O_CE, O_RRF, TINY_O_RANK), tiny_run(R_CE, R_RRF, TINY_R_RANK),
                                  methods=["ce", "rrf"], comparisons={"ce-rrf": ("ce", "rrf")},
                                  primary="ce-rrf")
    assert json.loads(json.dumps(res, allow_nan=False)) == res
    ce = res["methods"]["ce"]
    assert ce["rmse"] == pytest.approx(math.sqrt(5 / 48), rel=1e-15)
    assert ce["nrmse"] == pytest.approx(math.sqrt(5 / 29), rel=1e-15)
    assert ce["ktu"]["mean"] == pytest.approx(5 / 9, abs=1e-14)
    assert ce["rbo"]["mean"] == pytest.approx(959 / 1125, abs=1e-15) and ce["rbo"]["p"] == 0.8
    assert ce["per_query_difference"] == {"q1": 0.0, "q2": 0.25, "q3": -0.5}
    assert ce["ideal"] == {"rmse": 0.0, "nrmse": 0.0, "ktu": 1.0, "rbo": 1.0}
    # mean ce 7/12 = 0.5833 vs 1/2 = 0.5000: 833 units apart -> FAIL; rrf identical -> OK
    assert ce["mean"]["band"] == "FAIL" and res["methods"]["rrf"]["mean"]["band"] == "OK"
    cmp_ = res["comparisons"]["ce-rrf"]
    assert cmp_["er"] == pytest.approx(2 / 3, rel=1e-15) and cmp_["er_ideal"] == 1.0
    assert cmp_["delta_ri"] == pytest.approx(1 / 4, rel=1e-14) and cmp_["delta_ri_ideal"] == 0.0
    assert cmp_["mean_delta"]["band"] == "FAIL"  # 0.2500 vs 0.1667
    assert [f.split(":")[0] for f in res["failed"]] == ["methods.ce.mean", "comparisons.ce-rrf.mean_delta"]
    assert res["worst_band"] == "FAIL" and res["undefined"] == [] and res["primary"] == "ce-rrf"


def test_aggregate_refuses_inconsistent_inputs():
    good_o, good_r = tiny_run(O_CE, O_RRF, TINY_O_RANK), tiny_run(R_CE, R_RRF, TINY_R_RANK)
    kw = dict(methods=["ce", "rrf"], comparisons={"ce-rrf": ("ce", "rrf")})
    with pytest.raises(ValueError, match="primary"):
        ra.measure_reproduction(good_o, good_r, primary="blend-ce", **kw)
    with pytest.raises(ValueError, match="is not rrf - ce"):
        ra.measure_reproduction(good_o, good_r, methods=["ce", "rrf"], comparisons={"ce-rrf": ("rrf", "ce")},
                                primary="ce-rrf")
    with pytest.raises(ValueError, match="not measured"):
        ra.measure_reproduction(good_o, good_r, methods=["ce"], comparisons={"ce-rrf": ("ce", "rrf")},
                                primary="ce-rrf")


def test_aggregate_lists_undefined_effects():
    o_ce = {"q1": 0.5, "q2": 0.5}
    flat = {"values": {"ce": o_ce, "rrf": dict(o_ce)}, "rankings": {m: {"q1": ["a", "b"], "q2": ["b", "a"]}
                                                                    for m in ("ce", "rrf")},
            "deltas": {"ce-rrf": {"q1": 0.0, "q2": 0.0}}}
    res = ra.measure_reproduction(flat, flat, methods=["ce", "rrf"], comparisons={"ce-rrf": ("ce", "rrf")},
                                  primary="ce-rrf")
    assert res["comparisons"]["ce-rrf"]["er"] is None and res["failed"] == [] and res["worst_band"] == "OK"
    assert res["undefined"] == ["comparisons.ce-rrf.er: the original's mean Δ is 0"]
    assert res["comparisons"]["ce-rrf"]["delta_ri"] == 0.0


# ----------------------------------------------------- realistic: perturbed reproductions --

def _perturbed_runs(kind: str):
    """8 queries x 50 candidates; two methods' scores; the reproduction's scores perturbed
    (float16 rounding or N(0, 1e-3) noise, seeded) and re-ranked with the project's tie rule."""
    rng = np.random.default_rng(20240607)
    qids = [f"q{i}" for i in range(8)]
    runs = {"orig": {"values": {}, "rankings": {}}, "rep": {"values": {}, "rankings": {}}}
    qrels = {}
    for q in qids:
        docs = [str(x) for x in rng.choice(10 ** 6, 50, replace=False)]  # ids of mixed lengths
        qrels[q] = {d: int(rng.integers(1, 3)) for d in rng.choice(docs, 5, replace=False)}
        for m in ("ce", "rrf"):
            # scales at which float16 (11-bit significand) merges some scores into ties
            scores = rng.normal(5.0, 0.05, size=50) if m == "ce" else rng.normal(0.03, 0.0005, size=50)
            if kind == "float16":
                pert = scores.astype(np.float16).astype(np.float64)
            else:
                pert = scores + rng.normal(scale=1e-3, size=50)
            for run, s in (("orig", scores), ("rep", pert)):
                order = order_by_score({d: float(v) for d, v in zip(docs, s)})
                runs[run]["rankings"].setdefault(m, {})[q] = order
                runs[run]["values"].setdefault(m, {})[q] = ndcg_at(order, qrels[q], 10)
    for run in runs.values():
        v = run["values"]
        run["deltas"] = {"ce-rrf": {q: v["ce"][q] - v["rrf"][q] for q in qids}}
    return runs["orig"], runs["rep"]


@pytest.mark.parametrize("kind", ["float16", "noise"])
def test_perturbed_reproduction_against_independent_implementations(kind):
    orig, rep = _perturbed_runs(kind)
    changed = sum(orig["rankings"][m][q] != rep["rankings"][m][q] for m in ("ce", "rrf")
                  for q in orig["values"][m])
    assert changed > 0  # the perturbation does move documents
    res = ra.measure_reproduction(orig, rep, methods=["ce", "rrf"], comparisons={"ce-rrf": ("ce", "rrf")},
                                  primary="ce-rrf")
    assert json.loads(json.dumps(res, allow_nan=False)) == res
    for m in ("ce", "rrf"):
        o, r, blk = orig["values"][m], rep["values"][m], res["methods"][m]
        assert blk["rmse"] == pytest.approx(exact_rmse(o, r), rel=1e-14, abs=1e-300)
        assert blk["nrmse"] == pytest.approx(exact_nrmse(o, r), rel=1e-14, abs=1e-300)
        for q in o:
            assert blk["ktu"]["per_query"][q] == scipy_ktu(orig["rankings"][m][q], rep["rankings"][m][q])
            want = webber_rbo_ext(orig["rankings"][m][q], rep["rankings"][m][q], 0.8)
            assert abs(Fraction(blk["rbo"]["per_query"][q]) - want) <= Fraction(1, 10 ** 15)
        assert blk["ktu"]["mean"] == pytest.approx(float(exact_mean(list(blk["ktu"]["per_query"].values()))),
                                                   abs=1e-15)
        assert blk["mean"]["band"] == exact_band(blk["mean"]["original"], blk["mean"]["reproduction"])
        assert blk["mean"]["original"] == pytest.approx(float(exact_mean(list(o.values()))), abs=1e-15)
    c = res["comparisons"]["ce-rrf"]
    od, rd = orig["deltas"]["ce-rrf"], rep["deltas"]["ce-rrf"]
    assert c["er"] == pytest.approx(float(exact_er(od, rd)), rel=1e-12)
    ov, rv = orig["values"], rep["values"]
    assert c["delta_ri"] == pytest.approx(float(exact_dri(ov["ce"], ov["rrf"], rv["ce"], rv["rrf"])),
                                          rel=1e-12, abs=1e-15)
    assert c["mean_delta"]["band"] == exact_band(c["mean_delta"]["original"], c["mean_delta"]["reproduction"])
    want_failed = [k for k, blk in [("methods.ce.mean", res["methods"]["ce"]["mean"]),
                                    ("methods.rrf.mean", res["methods"]["rrf"]["mean"]),
                                    ("comparisons.ce-rrf.mean_delta", c["mean_delta"])]
                   if blk["band"] == "FAIL"]
    assert [f.split(":")[0] for f in res["failed"]] == want_failed


def test_a_comparison_without_its_deltas_is_named():
    good_o, good_r = tiny_run(O_CE, O_RRF, TINY_O_RANK), tiny_run(R_CE, R_RRF, TINY_R_RANK)
    del good_r["deltas"]["ce-rrf"]
    with pytest.raises(ValueError, match=r"reproduction: no per-query Δ for comparison 'ce-rrf'"):
        ra.measure_reproduction(good_o, good_r, methods=["ce", "rrf"], comparisons={"ce-rrf": ("ce", "rrf")},
                                primary="ce-rrf")
