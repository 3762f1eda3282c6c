"""check_reproduction on a run whose bits differ from its reference: did the experiment reproduce?

The reference is written from the fixture's smoke run (``reference.write_reference``); the "reproduction" is a
copy of that run whose logits are perturbed. The test re-ranks and re-evaluates the perturbed copy itself
(the blend 1/(60+r0) + 1/(60+r1) and the tie rule written here, nDCG@10 by pytrec_eval) and checks every
measure against independent implementations (tests/independent_repro.py: SciPy's Kendall tau on repro_eval's
union codes, RBO_ext in exact fractions, exact RMSE / nRMSE / ER / ΔRI, Pyserini's bands)."""

import csv
import hashlib
import json
import shutil
from fractions import Fraction

import pytest
import pytrec_eval
from independent_repro import (
    exact_band,
    exact_er,
    exact_mean,
    exact_nrmse,
    exact_rmse,
    scipy_ktu,
    webber_rbo_ext,
)

from rerank_study.repro import reference

pytestmark = pytest.mark.slow  # uses the smoke DAG run
MACHINE = {"cpu": {"model": "test"}, "machine": "test", "torch": {}}


def tsv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def write_tsv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def tie_rule_order(scores):
    """Score descending, then document id as a string descending (trec_eval's order)."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def orders_of(logits, cands):
    out = {}
    for q, docs in cands.items():
        ce = tie_rule_order({d: logits[q, d] for d in docs})
        r0, r1 = {d: i for i, d in enumerate(docs, 1)}, {d: i for i, d in enumerate(ce, 1)}
        blend = tie_rule_order({d: 1 / (60 + r0[d]) + 1 / (60 + r1[d]) for d in docs})
        out[q] = {"rrf": list(docs), "ce": ce, "blend": blend}
    return out


def perturbed_copy(smoke_run, dest, change):
    """A copy of the smoke run with logits changed by ``change`` and its per-query nDCG@10 recomputed here;
    the manifest's sha256 of the two changed artefacts follows the bytes."""
    shutil.copytree(smoke_run, dest)
    pairs = tsv(dest / "pairs.tsv")
    for r in pairs:
        r["logit"] = repr(change(float(r["logit"])))
    write_tsv(dest / "pairs.tsv", pairs)
    cands = {}
    for r in tsv(dest / "inputs/candidates.tsv"):
        cands.setdefault(r["qid"], []).append(r["doc_id"])
    orders = orders_of({(r["qid"], r["doc_id"]): float(r["logit"]) for r in pairs}, cands)
    qrels = {}
    for r in tsv(dest / "inputs/qrels.tsv"):
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = int(r["score"])
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    rows = tsv(dest / "per_query.tsv")
    for m in ("ce", "blend"):
        run = {q: {d: float(len(o[m]) - i) for i, d in enumerate(o[m])} for q, o in orders.items()}
        got = ev.evaluate(run)
        for r in rows:
            r[f"{m}_ndcg@10"] = repr(got[r["qid"]]["ndcg_cut_10"])
    write_tsv(dest / "per_query.tsv", rows)
    manifest = json.loads((dest / "manifest.json").read_text())
    for a in manifest["artefacts"]:
        if a["key"] in ("pairs", "per_query"):
            a["sha256"] = hashlib.sha256((dest / a["path"]).read_bytes()).hexdigest()
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return orders, {r["qid"]: r for r in rows}


@pytest.fixture(scope="module")
def ref_dir(smoke_run, tmp_path_factory):
    dest = tmp_path_factory.mktemp("reference")
    reference.write_reference(smoke_run, dest, MACHINE, 4)
    return dest


def test_logits_rounded_to_two_decimals_are_measured_against_independent_implementations(smoke_run, ref_dir,
                                                                                         tmp_path):
    run = tmp_path / "run"
    orders, pq = perturbed_copy(smoke_run, run, lambda x: round(x, 2))
    ref_logits = {(r["qid"], r["doc_id"]): float(r["logit"]) for r in tsv(ref_dir / "logits.tsv")}
    cands = {q: o["rrf"] for q, o in orders.items()}
    ref_orders, ref_pq = orders_of(ref_logits, cands), {r["qid"]: r for r in tsv(ref_dir / "per_query.tsv")}
    moved = sum(ref_orders[q][m] != orders[q][m] for q in orders for m in ("ce", "blend"))
    assert moved > 0  # the rounding moves documents (ties broken by document id)
    result = reference.compare(run, ref_dir, 60)
    assert result["verdict"] in ("REPRODUCED", "DIFFERENT")
    ms = result["measures"]
    for m in ("rrf", "ce", "blend"):
        o = {q: float(ref_pq[q][f"{m}_ndcg@10"]) for q in ref_pq}
        r = {q: float(pq[q][f"{m}_ndcg@10"]) for q in pq}
        blk = ms["methods"][m]
        assert blk["rmse"] == pytest.approx(exact_rmse(o, r), rel=1e-14, abs=1e-300)
        assert blk["nrmse"] == pytest.approx(exact_nrmse(o, r), rel=1e-14, abs=1e-300)
        assert blk["mean"]["band"] == exact_band(float(exact_mean(list(o.values()))),
                                                 float(exact_mean(list(r.values()))))
        for q in o:
            assert blk["ktu"]["per_query"][q] == scipy_ktu(ref_orders[q][m], orders[q][m])
            want = webber_rbo_ext(ref_orders[q][m], orders[q][m], 0.8)
            assert abs(Fraction(blk["rbo"]["per_query"][q]) - want) <= Fraction(1, 10 ** 15)
    summary = json.loads((run / "summary.json").read_text())
    for c, blk in ms["comparisons"].items():
        a, b = summary["comparisons"][c]["a"], summary["comparisons"][c]["b"]
        od = {q: float(ref_pq[q][f"{a}_ndcg@10"]) - float(ref_pq[q][f"{b}_ndcg@10"]) for q in ref_pq}
        rd = {q: float(pq[q][f"{a}_ndcg@10"]) - float(pq[q][f"{b}_ndcg@10"]) for q in pq}
        if exact_mean(list(od.values())) != 0:
            assert blk["er"] == pytest.approx(float(exact_er(od, rd)), rel=1e-12)
    # the verdict: DIFFERENT exactly when a band FAILs (the primary intervals are the copy's, unchanged)
    bands = [blk["mean"]["band"] for blk in ms["methods"].values()]
    bands += [blk["mean_delta"]["band"] for blk in ms["comparisons"].values()]
    assert all(v["unchanged"] for v in result["primary"]["verdicts"].values())
    assert result["verdict"] == ("DIFFERENT" if "FAIL" in bands else "REPRODUCED")
    assert len(result["failed"]) == bands.count("FAIL")
    text = reference.render(result, "perturbed")
    assert f"**Verdict: {result['verdict']}**" in text and "## Did the experiment reproduce?" in text
    for m in ("rrf", "ce", "blend"):
        assert f"| {m} | {ms['methods'][m]['mean']['original']:.4f} |" in text


def test_logits_that_change_no_ranking_reproduce_with_ideal_measures(smoke_run, ref_dir, tmp_path):
    """Every logit shifted by 1e-9: other bytes, the same orders, the same per-query metrics."""
    run = tmp_path / "run"
    perturbed_copy(smoke_run, run, lambda x: x + 1e-9)
    result = reference.compare(run, ref_dir, 60)
    assert result["verdict"] == "REPRODUCED" and result["failed"] == []
    assert result["logits"]["pairs_with_different_logit"] == result["logits"]["pairs_compared"] == 50
    for blk in result["measures"]["methods"].values():
        ideal = ("OK", 0.0, 1.0, 1.0)
        assert (blk["mean"]["band"], blk["rmse"], blk["ktu"]["mean"], blk["rbo"]["mean"]) == ideal
    for blk in result["measures"]["comparisons"].values():
        assert blk["mean_delta"]["band"] == "OK" and blk["delta_ri"] in (0.0, None)


def test_a_changed_interval_verdict_is_a_difference_even_when_every_band_is_ok(smoke_run, ref_dir, tmp_path):
    run = tmp_path / "run"
    perturbed_copy(smoke_run, run, lambda x: x + 1e-9)
    summary = json.loads((run / "summary.json").read_text())
    prim = summary["comparisons"][summary["primary"]]
    hi = prim["grouped_interval"][1]
    prim["grouped_interval"] = [hi + 1.0, hi + 2.0]  # covers neither 0 nor the threshold
    (run / "summary.json").write_text(json.dumps(summary))
    result = reference.compare(run, ref_dir, 60)
    was = result["primary"]["verdicts"]["grouped_interval"]["reference"]
    # the reference's interval covers one of them
    assert was != {"covers_0": False, "covers_threshold": False}
    assert result["verdict"] == "DIFFERENT"
    assert result["failed"] == [f"primary grouped_interval: verdicts {was} in the reference, "
                                "{'covers_0': False, 'covers_threshold': False} in the run"]
