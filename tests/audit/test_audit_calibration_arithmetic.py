"""The audit's standard-library calibration arithmetic against the pipeline's (numpy / scipy) on the same
draws: every endpoint, z0, a, SE and dropped count of one simulation equal bit for bit, the draws of the
documented generators equal numpy's, Student's t quantile within its stated tolerance, Wilson equal to
statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import audit_module

from rerank_study.calibration import calibration as cal
from rerank_study.calibration import calibration_inputs as cin

cs = audit_module("expected.calib_stats")
ec = audit_module("expected.expected_calibration")


def recorded(out, stream, s):
    """Simulation s of a stream as calibration's columns hold it (intervals and dropped count per
    comparison)."""
    comps = []
    for name in out["data"]["comparisons"]:
        col = out["simulations"][stream][name]
        ivs = {m: None if c["lower"][s] is None else [c["lower"][s], c["upper"][s]]
               for m, c in col["intervals"].items()}
        comps.append({"intervals": ivs, "bootstrap_t_dropped": col["bootstrap_t_dropped"][s]})
    return comps


def outcome(rec):
    """The audit's record of one simulation, restricted to what calibration.json holds of it."""
    return [{"intervals": c["intervals"], "bootstrap_t_dropped": c["bootstrap_t_dropped"]}
            for c in rec["comparisons"]]


def data(seed, G, K=3, ties=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, G).tolist()
    members, i = [], 0
    for s in sizes:
        members.append(list(range(i, i + s)))
        i += s
    deltas = {f"c{k}": (np.round(rng.normal(0.05 * k, 0.3, i), 1 if ties else 6)).tolist() for k in range(K)}
    return deltas, members


@pytest.mark.parametrize("seed,G,ties", [(1, 6, False), (2, 25, False), (3, 12, True), (4, 3, True)])
def test_one_simulation_of_each_stream_equals_the_pipelines(seed, G, ties):
    deltas, members = data(seed, G, ties=ties)
    settings = cin.CalibrationSettings(seed=110 + seed, S=3, B_inner=60, R=50, S_power=2, power_n=(7, 30),
                                       n_audit=3)
    out = cal.calibrate(deltas, members, settings=settings)
    mine = ec.CalibrationData(list(deltas), deltas, members)
    st = {"seed": settings.seed, "B_inner": 60, "percentiles": [2.5, 97.5], "R": 50}
    t_q = out["simulations"]["t_quantile"]
    assert abs(cs.t_quantile(0.975, len(members) - 1) - t_q) <= cs.T_QUANTILE_REL * t_q
    data_ = cin.prepare(deltas, members)
    for s in range(3):
        redo = ec.coverage_sample(mine, st, s, t_q)
        assert outcome(redo) == recorded(out, "coverage", s)
        # θ̂, se, z0 and a of the sample (not in the file): the pipeline's own sample, bit for bit
        pipeline = cal.coverage_sample(data_, settings, s)
        keys = ("theta", "se", "z0", "a")
        for mine_c, theirs in zip(redo["comparisons"], pipeline["comparisons"], strict=True):
            assert [mine_c[k] for k in keys] == [theirs[k] for k in keys]
        assert outcome(ec.null_sample(mine, st, s, t_q)) == recorded(out, "null", s)
    for n in (7, 30):
        col = out["simulations"]["power"][str(n)]
        for s in range(2):
            rec = ec.power_sample(mine, st, n, s)
            assert rec["queries"] == col["queries"][s]
            assert rec["theta"] == [col["comparisons"][c]["theta"][s] for c in deltas]
            assert rec["lower"] == [col["comparisons"][c]["lower"][s] for c in deltas]
    for k, name in enumerate(deltas):
        theta, se = cs.ratio_and_se(mine.sums[k], mine.sizes, range(len(members)))
        assert (theta, se) == (out["comparisons"][name]["theta_hat"], out["comparisons"][name]["se"])
        flips = ec.randomization(mine, st, 10 ** 9)[k]
        assert flips["flips"] == 50 and flips["p"] == out["comparisons"][name]["randomization"]["p"]
        assert flips["extreme"] == out["comparisons"][name]["randomization"]["extreme"]


def test_a_degenerate_sample_is_undefined_on_both_sides():
    deltas = {"zero": [0.0] * 6}
    members = [[0], [1, 2], [3], [4, 5]]
    settings = cin.CalibrationSettings(seed=5, S=2, B_inner=20, R=10, S_power=1, power_n=(4,), n_audit=2)
    out = cal.calibrate(deltas, members, settings=settings)
    mine = ec.CalibrationData(["zero"], deltas, members)
    st = {"seed": 5, "B_inner": 20, "percentiles": [2.5, 97.5]}
    rec = ec.coverage_sample(mine, st, 0, out["simulations"]["t_quantile"])
    assert outcome(rec) == recorded(out, "coverage", 0)
    ivs = rec["comparisons"][0]["intervals"]
    assert ivs["bca"] is None and ivs["bootstrap_t"] is None


def test_t_quantile_within_its_tolerance_of_scipy():
    from scipy.stats import t

    for df in (1, 2, 3, 4, 7, 30, 91, 551):
        for p in (0.975, 0.995, 0.9):
            assert cs.t_quantile(p, df) == pytest.approx(float(t.ppf(p, df)), rel=cs.T_QUANTILE_REL)


def test_wilson_equals_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for x, n in ((0, 20), (14, 20), (1900, 2000), (40, 40)):
        theirs = list(proportion_confint(x, n, 0.05, "wilson"))
        assert cs.wilson(x, n, 0.05) == pytest.approx(theirs, abs=1e-12)
        # the same arithmetic as the pipeline's: bit-equal
        assert cs.wilson(x, n, 0.05) == list(cal.wilson_interval(x, n, 0.05))


def test_the_audits_sample_is_distinct_uniform_and_everything_when_it_covers_all():
    cc = audit_module("checks.calibration")
    rng_mod = audit_module("expected.rng")
    # all when n >= total; distinct, sorted, in range otherwise
    assert cc.audit_sample(rng_mod.DefaultRng(3), 5, 9) == [0, 1, 2, 3, 4]
    picks = cc.audit_sample(rng_mod.DefaultRng(4), 2000, 20)
    assert len(set(picks)) == 20 and picks == sorted(picks) and 0 <= picks[0] and picks[-1] < 2000
    # uniform: over 3000 samples of 3 out of 10 each number is drawn with probability 3/10
    # (binomial, n = 3000, p = 0.3: sd 25.1; 4.5 sd band, 10 counts)
    counts = [0] * 10
    for seed in range(3000):
        for i in cc.audit_sample(rng_mod.DefaultRng(seed), 10, 3):
            counts[i] += 1
    assert all(abs(c - 900) <= 4.5 * (3000 * 0.3 * 0.7) ** 0.5 for c in counts), counts
    # the power grid's pairs (n, s): j -> (power_n[j // S_power], j % S_power); all when n_audit covers them
    st = {"S": 3, "S_power": 2, "power_n": [10, 30], "n_audit": 10}
    picked = cc.samples(st, 11)
    assert picked["coverage"] == picked["null"] == [0, 1, 2]
    assert picked["power"] == [(10, 0), (10, 1), (30, 0), (30, 1)]
