"""The grouped bootstrap: vectorised == slow loop, ratio estimator, percentiles, diagnostics."""

import re

import numpy as np
import pytest

from rerank_study.stats import bootstrap as bs


def _random_setup(seed=7, n=40, G=25):
    rng = np.random.default_rng(seed)
    deltas = (rng.random(n) - 0.4).round(6).tolist()
    labels = sorted(rng.integers(0, G, size=n).tolist())
    groups = {}
    for i, g in enumerate(labels):
        groups.setdefault(g, []).append(i)
    positions = list(groups.values())
    return deltas, positions


def test_vectorised_replicates_equal_slow_loop_bit_for_bit():
    deltas, positions = _random_setup()
    g_idx, q_idx = bs.draw_indices(110, len(positions), len(deltas), 500)
    fast = bs.grouped_replicates(deltas, positions, g_idx)
    slow = [bs.replicate_slow(deltas, positions, row) for row in g_idx.tolist()]
    assert fast.tolist() == slow  # exact equality, not approx
    fast_q = bs.query_replicates(deltas, q_idx)
    slow_q = [bs.replicate_slow(deltas, [[i] for i in range(len(deltas))], row) for row in q_idx.tolist()]
    assert fast_q.tolist() == slow_q


def test_estimator_is_the_ratio_not_the_mean_of_group_means():
    deltas = [1.0, 0.0, 0.0, 0.0]
    positions = [[0], [1, 2, 3]]
    draw = np.array([[0, 1]])
    rep = bs.grouped_replicates(deltas, positions, draw)[0]
    assert rep == 0.25  # (1 + 0 + 0 + 0) / (1 + 3)
    assert bs.mean_of_group_means(deltas, positions, [0, 1]) == 0.5  # the wrong estimator differs
    # a group drawn twice counts twice: (1 + 1) / (1 + 1)
    assert bs.grouped_replicates(deltas, positions, np.array([[0, 0]]))[0] == 1.0
    # (0*3 + 0*3) / 6
    assert bs.grouped_replicates(deltas, positions, np.array([[1, 1]]))[0] == 0.0


def test_full_sample_draw_gives_the_query_mean():
    deltas, positions = _random_setup()
    draw = np.array([list(range(len(positions)))])
    order = [i for g in positions for i in g]
    assert bs.grouped_replicates(deltas, positions, draw)[0] == pytest.approx(np.mean(deltas), abs=1e-15)
    assert sorted(order) == list(range(len(deltas)))


@pytest.mark.parametrize("p", [0, 2.5, 25, 50, 97.5, 100])
def test_percentile_equals_numpy_linear_exactly(p):
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 10000):
        x = rng.normal(size=n)
        assert bs.percentile_linear(x.tolist(), p) == float(np.percentile(x, p))


def test_percentile_hand_example():
    # n=5, p=2.5: h = 4*0.025 = 0.1 -> 1 + 0.1*(2-1) = 1.1 ; p=97.5: h = 3.9 -> 4 + 0.9 -> b - (b-a)*0.1 = 4.9
    assert bs.percentile_linear([5, 1, 4, 2, 3], 2.5) == pytest.approx(1.1, abs=1e-15)
    assert bs.percentile_linear([5, 1, 4, 2, 3], 97.5) == pytest.approx(4.9, abs=1e-15)


def test_index_matrices_follow_the_documented_generator_protocol():
    g, q = bs.draw_indices(110, 94, 100, 10)
    rng = np.random.default_rng(110)
    assert (g == rng.integers(0, 94, size=(10, 94))).all()
    assert (q == rng.integers(0, 100, size=(10, 100))).all()
    assert g.min() >= 0 and g.max() < 94


def test_leave_one_group_out_hand_example():
    deltas = [1.0, 2.0, 3.0, 6.0]
    positions = [[0, 1], [2], [3]]
    assert bs.leave_one_group_out(deltas, positions) == [4.5, 3.0, 2.0]


def test_wins_ties_losses():
    assert bs.wins_ties_losses([0.1, 0.0, -0.2, 0.0, 0.3]) == (2, 2, 1)


def test_interval_covers():
    iv = bs.Interval(-0.01, 0.02)
    assert iv.covers(0.0) and iv.covers(0.01) and not iv.covers(0.03)


def test_groups_must_partition():
    with pytest.raises(ValueError, match="partition"):
        bs.group_positions(["a", "b"], [["a"]])


def _exact(message):
    """A pytest.raises pattern that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


def test_group_positions_follow_the_query_order_not_the_string_order():
    # "q2" < "q10" is false as strings; the analysed order is what counts
    assert bs.group_positions(["q2", "q10", "q1"], [["q2", "q1"], ["q10"]]) == [[0, 2], [1]]


@pytest.mark.parametrize("groups", [[["a"], ["a"]], [["a", "b"], ["b"]], [["a"]]])
def test_groups_that_repeat_or_miss_a_query_are_refused(groups):
    with pytest.raises(ValueError, match=_exact("groups must partition the analysed queries exactly")):
        bs.group_positions(["a", "b"], groups)


@pytest.mark.parametrize("qids,groups", [
    (["a", "b"], [["a"], ["c"]]),          # a member that is not an analysed query
    (["a", "b"], [["a"], ["b"], ["c"]]),
    (["a", "a"], [["a"], ["a"]]),          # a duplicated analysed query id
])
def test_groups_with_unknown_members_or_duplicate_query_ids_are_refused(qids, groups):
    with pytest.raises(ValueError, match=_exact("groups must partition the analysed queries exactly")):
        bs.group_positions(qids, groups)


def test_draw_indices_accepts_one_of_each_and_refuses_zero():
    g, q = bs.draw_indices(1, 1, 1, 1)
    assert g.tolist() == [[0]] and q.tolist() == [[0]]
    for args, got in [((1, 0, 1, 1), "1, 0, 1"), ((1, 1, 0, 1), "1, 1, 0"), ((1, 1, 1, 0), "0, 1, 1")]:
        with pytest.raises(ValueError, match=_exact(f"need B, G, n >= 1 (got {got})")):
            bs.draw_indices(*args)


def test_group_sums_are_float64_and_sizes_int64_whatever_the_input_type():
    deltas = np.array([0.5, 0.25, 1.0], dtype=np.float32)  # exact in float32
    sums, sizes = bs.group_sums(list(deltas), [[0, 2], [1]])
    assert sums.dtype == np.float64 and sizes.dtype == np.int64
    assert sums.tolist() == [1.5, 0.25] and sizes.tolist() == [2, 1]  # 0.5 + 1.0 ; 0.25
    sums, sizes = bs.group_sums([], [])
    assert sums.dtype == np.float64 and sizes.dtype == np.int64


def test_query_replicates_add_in_float64_even_for_float32_deltas():
    d32 = np.array([0.1, 0.2, 0.7], dtype=np.float32)
    # the float64 values of the float32 numbers, added left to right in Python floats, / 3
    expected = (float(d32[0]) + float(d32[1]) + float(d32[2])) / 3
    assert bs.query_replicates(d32, np.array([[0, 1, 2]])).tolist() == [expected]


def test_mean_of_group_means_hand_example():
    deltas = [2.0, 4.0, 0.0, 0.0]
    positions = [[0, 1], [2, 3]]
    assert bs.mean_of_group_means(deltas, positions, [0, 1]) == 1.5     # (6/2 + 0/2) / 2
    assert bs.mean_of_group_means(deltas, positions, [0, 0, 1]) == 2.0  # (3 + 3 + 0) / 3


def test_seq_mean_is_a_sequential_sum_over_the_count():
    assert bs.seq_mean([1.0, 2.0, 4.0]) == 7.0 / 3
    assert bs.seq_mean(x for x in (1.0, 3.0)) == 2.0  # any iterable
    # left to right: (1e16 + 1) rounds to 1e16 (spacing 2 there), minus 1e16 -> 0; a compensated
    # sum (math.fsum) would give 1 -> 1/3
    assert bs.seq_mean([1e16, 1.0, -1e16]) == 0.0
    with pytest.raises(ValueError, match=_exact("mean of an empty list")):
        bs.seq_mean([])


def test_percentile_at_an_exact_midpoint_uses_numpys_upper_formula():
    # n=2, p=50: h = 0.5, t = 0.5 -> numpy takes b - (b-a)*(1-t) = 0.8 - 0.7000000000000001*0.5 = 0.45,
    # while a + (b-a)*t would give 0.45000000000000007
    assert bs.percentile_linear([0.8, 0.1], 50) == float(np.percentile([0.8, 0.1], 50)) == 0.45


def test_percentile_refuses_empty_input_and_p_outside_0_100():
    with pytest.raises(ValueError, match=_exact("percentile of an empty list")):
        bs.percentile_linear([], 50)
    for p in (100.5, -0.5):
        with pytest.raises(ValueError, match=_exact(f"percentile {p} outside [0, 100]")):
            bs.percentile_linear([1.0, 2.0], p)


def test_leave_one_group_out_refuses_a_single_group():
    with pytest.raises(ValueError, match=_exact("leave-one-group-out needs at least two groups")):
        bs.leave_one_group_out([1.0, 2.0], [[0, 1]])


def test_interval_is_closed_at_both_ends():
    iv = bs.Interval(-0.01, 0.02)
    assert iv.covers(-0.01) and iv.covers(0.02)
    assert not iv.covers(-0.010000001) and not iv.covers(0.020000001)


def test_interval_is_the_2_5_and_97_5_percentiles_of_the_replicates():
    # hand example of test_percentile_hand_example: 1.1 and 4.9
    iv = bs.interval([5, 1, 4, 2, 3])
    assert iv.lower == pytest.approx(1.1, abs=1e-15) and iv.upper == pytest.approx(4.9, abs=1e-15)
    reps = np.random.default_rng(5).normal(size=1001)
    assert bs.interval(reps.tolist()) == bs.Interval(float(np.percentile(reps, 2.5)),
                                                     float(np.percentile(reps, 97.5)))
    assert bs.interval(reps.tolist(), (5, 95)) == bs.Interval(float(np.percentile(reps, 5)),
                                                               float(np.percentile(reps, 95)))
