"""Conclusion retention (rerank_study.repro.retention): Kendall's tau-b, the top-k overlap and the largest
|delta logit| against hand calculation; the paired interval of the difference and the changed verdicts on
tables whose answer
is known by construction; and the per-query table rebuilt from the committed stand-in reference's logits equal
to the per-query table the pipeline committed beside them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import full_mirror

from rerank_study.core.fileio import read_tsv
from rerank_study.core.names import column
from rerank_study.data import beir, splits
from rerank_study.rankings import candidates
from rerank_study.repro import audited, retention
from rerank_study.settings.config import load_config, run_settings
from rerank_study.stats import analysis
from rerank_study.stats.grouping import evidence_groups

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "lockfiles" / "reference" / "standin-dev"


def test_agreement_of_two_scorers_by_hand():
    ref = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}
    other = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 0.5}
    got = retention.query_agreement(ref, other, k=2)
    # 6 pairs, one discordant (b, c): tau = (5 - 1) / 6; top 2: {a, b} against {a, c}
    assert got["kendall_tau_b"] == pytest.approx(4 / 6, abs=1e-15)
    assert got["top2_overlap"] == 0.5
    assert got["max_abs_delta_logit"] == 1.0 and got["pairs_equal"] == 1 and got["pairs"] == 4


def test_tau_is_tau_b_when_scores_tie():
    # pairs (a,b): tied in ref only; (a,c): concordant; (b,c): tied in other only
    # tau_b = (n_c - n_d) / sqrt((n0 - n1)(n0 - n2)) = 1 / sqrt(2 * 2)
    got = retention.query_agreement({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 1.0, "b": 0.0, "c": 0.0}, k=1)
    assert got["kendall_tau_b"] == pytest.approx(0.5, abs=1e-15)
    with pytest.raises(ValueError, match="different candidates"):
        retention.query_agreement({"a": 1.0}, {"b": 1.0}, k=1)


def test_summary_over_queries():
    ref = {"1": {"a": 2.0, "b": 1.0}, "2": {"a": 2.0, "b": 1.0, "c": 0.0}}
    other = {"1": {"a": 1.0, "b": 2.0}, "2": {"a": 2.0, "b": 1.0, "c": 0.25}}
    got = retention.logit_agreement(["1", "2"], ref, other, k=1)
    assert {q: a["top1_overlap"] for q, a in got["per_query"].items()} == {"1": 0.0, "2": 1.0}
    assert "top10_overlap" in retention.logit_agreement(["1", "2"], ref, other)  # the default k is 10
    with pytest.raises(ValueError) as exc:
        retention.query_agreement({d: 0.0 for d in "abcdefg"}, {d: 0.0 for d in "abh"}, k=1)
    assert str(exc.value) == "the two scorers scored different candidates: ['c', 'd', 'e', 'f', 'g']"
    assert got["kendall_tau_b"] == {"min": -1.0, "median": 0.0, "mean": 0.0}
    assert got["top1_overlap"] == {"min": 0.0, "median": 0.5, "mean": 0.5}
    assert got["max_abs_delta_logit"] == 1.0 and got["pairs_equal"] == 2 and got["pairs"] == 5


def _plan(B=200):
    return analysis.AnalysisPlan(
        comparisons={"blend-ce": ("blend", "ce"), "ce-rrf": ("ce", "rrf")},
        primary="blend-ce",
        metric="ndcg@10",
        B=B,
        seed=7,
        percentiles=(2.5, 97.5),
        threshold=0.01,
    )


def _table(values):  # qid -> (rrf, ce, blend)
    return {
        q: {column(m, "ndcg@10"): v for m, v in zip(("rrf", "ce", "blend"), vals)}
        for q, vals in values.items()
    }


def test_the_same_scorer_retains_everything_and_its_difference_is_exactly_zero():
    t = _table({"1": (0.1, 0.2, 0.4), "2": (0.3, 0.2, 0.5), "3": (0.0, 0.1, 0.1), "4": (0.2, 0.6, 0.6)})
    groups = [["1", "2"], ["3"], ["4"]]
    got = retention.conclusion(list(t), groups, t, t, _plan(), {"ce-rrf": 0.02})
    assert got["conclusion_retained"] and got["verdicts_changed"] == []
    assert got["difference"]["mean"] == 0.0 and got["difference"]["grouped_interval"] == [0.0, 0.0]
    assert got["reference"] == got["other"]


def test_a_constant_shift_of_the_primary_delta_gives_that_shift_as_its_interval_and_flips_verdicts():
    ref = _table({"1": (0.1, 0.2, 0.5), "2": (0.3, 0.2, 0.5), "3": (0.0, 0.1, 0.4), "4": (0.2, 0.6, 0.9)})
    other = _table({q: (r["rrf_ndcg@10"], r["ce_ndcg@10"], r["ce_ndcg@10"]) for q, r in ref.items()})
    # reference blend - ce = 0.3 for every query; other: 0 for every query -> the difference is -0.3 in every
    # replicate of any draw
    got = retention.conclusion(list(ref), [["1", "2"], ["3"], ["4"]], ref, other, _plan(), {})
    assert got["difference"]["mean"] == pytest.approx(-0.3, abs=1e-12)
    lo, hi = got["difference"]["grouped_interval"]
    assert lo == pytest.approx(-0.3, abs=1e-12) and hi == pytest.approx(-0.3, abs=1e-12)
    assert not got["difference"]["covers_0"] and not got["conclusion_retained"]
    assert "blend-ce.grouped_covers_0" in got["verdicts_changed"]
    assert "blend-ce.mean_reaches_threshold" in got["verdicts_changed"]
    assert not any(v.startswith("ce-rrf.") for v in got["verdicts_changed"])  # ce is the same in both


def test_a_guardrail_that_flips_is_a_changed_verdict():
    ref = _table({"1": (0.5, 0.6, 0.6), "2": (0.5, 0.6, 0.6), "3": (0.5, 0.6, 0.6)})
    other = _table({"1": (0.5, 0.4, 0.6), "2": (0.5, 0.4, 0.6), "3": (0.5, 0.4, 0.6)})
    got = retention.conclusion(list(ref), [["1"], ["2"], ["3"]], ref, other, _plan(), {"ce-rrf": 0.02})
    assert (
        got["guardrails"]["reference"]["ce-rrf"]["pass"] and not got["guardrails"]["other"]["ce-rrf"]["pass"]
    )
    assert "guardrail ce-rrf.pass" in got["verdicts_changed"]


def test_the_method_table_uses_the_given_blend_k_and_mrr_depth():
    """By hand: candidates a b c d in RRF order, logits rank them c b d a. Blend 1/(k+r0) + 1/(k+r1):
    k = 1 gives c .75, a .7, b .667, d .45 (a at rank 2); k = 60 would give c, b, a, d (a at rank 3).
    a is the one relevant document: MRR@2 of blend = 1/2, of ce (a at rank 4) = 0, of rrf = 1."""
    cfg = {"ndcg_k": 10, "recall_ks": [10], "mrr_k": 2}
    logits = {"q": {"a": 1.0, "b": 3.0, "c": 4.0, "d": 2.0}}
    got = retention.method_table(["q"], {"q": ["a", "b", "c", "d"]}, logits, {"q": {"a": 1}}, cfg, 1)["q"]
    assert (got["blend_mrr@2"], got["ce_mrr@2"], got["rrf_mrr@2"]) == (0.5, 0.0, 1.0)
    assert got["blend_ndcg@10"] == pytest.approx(1 / math.log2(3), abs=1e-15)


@pytest.mark.slow
def test_the_table_from_the_committed_reference_logits_is_its_committed_per_query_table():
    data = full_mirror()
    cfg = load_config(ROOT / "config" / "config.yaml")
    qids = splits.read_split(ROOT / "lockfiles" / "splits" / "dev.txt")
    cands = candidates.read_candidates(ROOT / "lockfiles" / "candidates" / "candidates.tsv")
    qrels = beir.read_qrels(data / "qrels" / "train.tsv")
    logits: dict = {}
    for r in read_tsv(REFERENCE / "logits.tsv"):
        logits.setdefault(r["qid"], {})[r["doc_id"]] = float(r["logit"])
    table = retention.method_table(
        qids, {q: cands[q] for q in qids}, logits, qrels, cfg["metrics"], cfg["blend"]["k"]
    )
    committed = {r["qid"]: r for r in read_tsv(REFERENCE / "per_query.tsv")}
    assert list(committed) == qids
    for q in qids:
        for col, val in table[q].items():
            want = committed[q][col]
            assert (val is None and want == "") or math.isclose(float(want), val, rel_tol=0, abs_tol=0), (
                q,
                col,
            )
    plan = analysis.AnalysisPlan.from_settings(run_settings(cfg))
    got = retention.conclusion(
        qids, evidence_groups(qids, qrels), table, table, plan, cfg["evalstats"]["guardrails"]
    )
    assert got["conclusion_retained"] and got["difference"]["grouped_interval"] == [0.0, 0.0]


def _side(settings, labels, derived=None, asked=True, rederived="same"):
    made = derived if rederived == "same" else rederived
    stage = {"asked": asked, "pairs": 20 if asked else None, "note": None if asked else "not asked for",
             "seed_source": audited.FRESH_DRAW, "model_files_sha256": {"config.json": "c", "model.bin": "w"},
             "child": {"derived": {"sha256": derived, "rederived_sha256": made}} if derived else {}}
    return {"manifest": {"model_identity": "M", "model_weights_sha256": "W", "scorer": "stand-in",
                         "lockdir": "../../lockfiles", "kind": "development", "settings": settings},
            "verdict": {"ok": True, "info": {"reinfer": stage}}, "labels": set(labels)}


TORCH_LABEL, INT8_LABEL = "M weights-sha256:W", "M onnx-int8:sha256:P weights-sha256:W"


def test_the_two_sides_must_be_the_torch_run_and_the_backend_run_of_one_model_each_reinferred():
    torch_side = _side({"max_length": 512}, [TORCH_LABEL])
    int8_side = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="P")
    assert retention.side_problems("onnx-int8", "P", torch_side, int8_side) == []
    # a torch run named as the backend's run: its settings and labels name no backend
    relabelled = _side({"max_length": 512}, [TORCH_LABEL])
    got = retention.side_problems("onnx-int8", "P", torch_side, relabelled)
    assert any("settings name backend None" in p for p in got) and any("scored by" in p for p in got)
    assert any("re-inferred with derived file None" in p for p in got)
    # a passing audit that re-inferred nothing
    unchecked = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], asked=False)
    got = retention.side_problems("onnx-int8", "P", torch_side, unchecked)
    assert any("re-inferred nothing" in p for p in got)
    # the same model name and weights, another file (the red team's config.json of another activation)
    other_files = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="P")
    other_files["verdict"]["info"]["reinfer"]["model_files_sha256"]["config.json"] = "c2"
    got = retention.side_problems("onnx-int8", "P", torch_side, other_files)
    assert len(got) == 1 and got[0].startswith("the two audits re-inferred with other model files")
    # a passing audit whose draw was chosen by hand
    hand = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="P")
    hand["verdict"]["info"]["reinfer"]["seed_source"] = "--reinfer-seed: CHOSEN BY HAND"
    got = retention.side_problems("onnx-int8", "P", torch_side, hand)
    assert got == ["the onnx-int8 side: its audit's re-inference drew its batches by '--reinfer-seed: CHOSEN "
                   "BY HAND', not 'secrets.randbits(64), drawn at audit time'"]
    # another file than the pin, another model, a torch side that names a backend
    assert retention.side_problems("onnx-int8", "Q", torch_side, int8_side)
    other_model = {**torch_side, "manifest": {**torch_side["manifest"], "model_identity": "N"}}
    got = retention.side_problems("onnx-int8", "P", other_model, int8_side)
    assert any("model_identity" in p for p in got)
    assert retention.side_problems("onnx-int8", "P", int8_side, int8_side)
    # the pinned file ran, but the audit made another file from the model by the recipe (or none): the pin
    # is not the recipe's file
    for made in ("F", None):
        settings = {"max_length": 512, "backend": "onnx-int8"}
        unbound = _side(settings, [INT8_LABEL], derived="P", rederived=made)
        got = retention.side_problems("onnx-int8", "P", torch_side, unbound)
        assert got == [f"the onnx-int8 side's audit made the derived file again with sha256 {made!r}, not "
                       "the pin's 'P'"]


def test_the_difference_interval_uses_the_analyses_seeded_grouped_draws_and_the_declared_percentiles():
    """Expected by numpy alone: the plan's seeded generator draws the B x G group indices first (the analyses'
    grouped draws); a replicate is the drawn groups' summed difference over their summed sizes; the ends are
    numpy's linear percentiles at the plan's (10, 90)."""
    import numpy as np

    ref = _table({"1": (0.1, 0.2, 0.5), "2": (0.3, 0.2, 0.1), "3": (0.0, 0.1, 0.4), "4": (0.2, 0.6, 0.9),
                  "5": (0.4, 0.3, 0.2), "6": (0.1, 0.5, 0.3), "7": (0.2, 0.2, 0.25)})
    other = _table({"1": (0.1, 0.2, 0.2), "2": (0.3, 0.2, 0.6), "3": (0.0, 0.1, 0.1), "4": (0.2, 0.6, 0.7),
                    "5": (0.4, 0.3, 0.9), "6": (0.1, 0.5, 0.55), "7": (0.2, 0.2, 0.2)})
    groups = [["1", "2"], ["3"], ["4", "5"], ["6"], ["7"]]  # many distinct replicate values: the ends depend
    plan = analysis.AnalysisPlan(comparisons={"blend-ce": ("blend", "ce")}, primary="blend-ce",  # on the draw
                                 metric="ndcg@10", B=301, seed=11, percentiles=(13.0, 87.0), threshold=0.01)
    got = retention.conclusion(list(ref), groups, ref, other, plan, {})
    diff = {q: (other[q]["blend_ndcg@10"] - other[q]["ce_ndcg@10"]) - (ref[q]["blend_ndcg@10"]
                                                                       - ref[q]["ce_ndcg@10"]) for q in ref}
    sums = np.array([sum(diff[q] for q in g) for g in groups])
    sizes = np.array([len(g) for g in groups])
    idx = np.random.default_rng(11).integers(0, 5, size=(301, 5), dtype=np.int64)
    reps = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    lo, hi = got["difference"]["grouped_interval"]
    assert lo == pytest.approx(np.percentile(reps, 13), abs=1e-12)
    assert hi == pytest.approx(np.percentile(reps, 87), abs=1e-12)
    other_draw = np.random.default_rng(12).integers(0, 5, size=(301, 5), dtype=np.int64)
    other_reps = sums[other_draw].sum(axis=1) / sizes[other_draw].sum(axis=1)
    assert lo != pytest.approx(np.percentile(other_reps, 13))  # the ends depend on the draw
    assert got["difference"]["mean"] == pytest.approx(sum(diff.values()) / 7, abs=1e-12)
    assert got["difference"]["covers_0"] == (lo <= 0.0 <= hi)
    assert got["primary"] == "blend-ce" and got["metric"] == "ndcg@10"
    assert got["difference"]["definition"] == (
        "per query: the other scorer's primary delta - the reference's; "
        "grouped paired bootstrap with the analyses' own draws")
    assert set(got["reference"]) >= {"means", "primary_mean", "grouped_interval"}
    assert got["reference"]["means"] == {m: pytest.approx(sum(ref[q][f"{m}_ndcg@10"] for q in ref) / 7)
                                         for m in ("rrf", "ce", "blend")}


def test_each_claim_of_a_side_that_differs_is_named_exactly():
    torch_side = _side({"max_length": 512}, [TORCH_LABEL])
    int8_side = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="P")
    for key, value in (("model_identity", "N"), ("model_weights_sha256", "W2"), ("scorer", "real"),
                       ("kind", "confirmation")):
        other = {**int8_side, "manifest": {**int8_side["manifest"], key: value}}
        got = retention.side_problems("onnx-int8", "P", torch_side, other)
        assert got[0] == f"manifest {key}: {torch_side['manifest'][key]!r} (torch) against {value!r}"
    named = _side({"max_length": 512, "backend": "onnx"}, [TORCH_LABEL])
    got = retention.side_problems("onnx-int8", "P", named, int8_side)
    assert got[0] == "the torch side's settings name backend 'onnx'"
    bare = {k: v for k, v in int8_side["manifest"].items() if k != "settings"}
    no_settings = {**int8_side, "manifest": bare}
    got = retention.side_problems("onnx-int8", "P", torch_side, no_settings)
    assert got == ["the onnx-int8 side's settings name backend None"]
    fp32 = _side({"max_length": 512, "backend": "onnx"}, [INT8_LABEL], derived="P")
    got = retention.side_problems("onnx-int8", "P", torch_side, fp32)
    assert got == ["the onnx-int8 side's settings name backend 'onnx'"]
    bare_torch = {**torch_side,
                  "manifest": {k: v for k, v in torch_side["manifest"].items() if k != "settings"}}
    assert retention.side_problems("onnx-int8", "P", bare_torch, int8_side) == []
    unasked = _side({"max_length": 512}, [TORCH_LABEL], asked=False)
    got = retention.side_problems("onnx-int8", "P", unasked, int8_side)
    assert got == ["the torch side: its audit re-inferred nothing (info.reinfer: 'not asked for')"]
    three = _side({"max_length": 512}, ["c", "a", "b"])
    got = retention.side_problems("onnx-int8", "P", three, int8_side)
    assert got == [f"the torch side's pairs were scored by ['a', 'b'], not {TORCH_LABEL!r}"]
    ran_other = _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="F", rederived="P")
    got = retention.side_problems("onnx-int8", "P", torch_side, ran_other)
    assert got == ["the onnx-int8 side's audit re-inferred with derived file 'F', not 'P'"]
    # the files of BOTH sides are required: none recorded on either side is not "the same files"
    for which in (0, 1):
        sides = [_side({"max_length": 512}, [TORCH_LABEL]), _side({"max_length": 512, "backend": "onnx-int8"},
                                                                 [INT8_LABEL], derived="P")]
        sides[which]["verdict"]["info"]["reinfer"]["model_files_sha256"] = {}
        got = retention.side_problems("onnx-int8", "P", *sides)
        files = ["{}" if i == which else "{'config.json': 'c', 'model.bin': 'w'}" for i in (0, 1)]
        assert got == [f"the two audits re-inferred with other model files (sha256 of every file: torch "
                       f"{files[0]}, onnx-int8 {files[1]})"]
    both_empty = [_side({"max_length": 512}, [TORCH_LABEL]),
                  _side({"max_length": 512, "backend": "onnx-int8"}, [INT8_LABEL], derived="P")]
    for s in both_empty:
        s["verdict"]["info"]["reinfer"]["model_files_sha256"] = {}
    assert retention.side_problems("onnx-int8", "P", *both_empty)[0].startswith("the two audits re-inferred "
                                                                                 "with other model files")
