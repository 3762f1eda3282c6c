"""The audit's one home for comparisons (scripts/audit/core/compare.py): values as values, a number at the
precision a page shows it with, and where two sequences first differ. Expected values by hand."""

import math

import pytest
from conftest import audit_module

compare = audit_module("core.compare")


@pytest.mark.parametrize("a, b, same", [
    (8, 8.0, True), (-0.0, 0.0, True), (0.1, 0.1000001, False),
    (True, 1, False), (1, True, False), (True, True, True), (False, True, False),
    (math.nan, math.nan, False), ("8", 8, False), ("a", "a", True),
    ({"x": [1, 2.0]}, {"x": [1.0, 2]}, True), ({"x": 1}, {"x": 1, "y": 2}, False),
    ({"x": 1}, {"y": 1}, False),
    ([1, 2], (1, 2), True), ([1, 2], [1, 2, 3], False), ([1, [2]], [1, [3]], False), (None, None, True),
    (["a"], "a", False), ({"a": 1}, ["a"], False), ({}, "", False),     # a container only to its own kind
])
def test_same_value_compares_values_not_their_text(a, b, same):
    assert compare.same_value(a, b) is same


def test_numbers_are_read_as_written_and_not_inside_words():
    assert compare.numbers("Δ 0.125 in [−0.05, 2e-3] for x1 and 7.") == ["0.125", "−0.05", "2e-3", "7"]


@pytest.mark.parametrize("shown, value, same", [
    ("0.125", 0.1249, True),        # |0.125 - 0.1249| = 0.0001 <= 0.0005
    ("0.125", 0.1255, True),        # exactly half a unit in the last place
    ("0.125", 0.126, False),        # 0.001 > 0.0005
    ("−0.050", -0.05, True), ("1", 1, True), ("1", 0.6, False),       # a small whole number only when exact
    ("12", 12.4, False), ("124", 124.4, True), ("124", 124.6, False),  # 3 digits: half a unit is 0.5
    ("2e-3", 0.0021, True), ("2e-3", 0.0026, False),
    ("0.5", 0.54, True),            # one decimal: half a unit is 0.05
    ("120", 120.4, True),           # trailing zeros are digits: 3 of them
    ("0.12e2", 12.4, False), ("0.12E2", 12.4, False),  # 12: a leading 0 is no digit
    ("1", True, False), ("1", "1", False),
])
def test_same_number_is_the_value_at_the_shown_precision(shown, value, same):
    assert compare.same_number(shown, value) is same


def test_first_difference_and_what_each_side_shows_there():
    assert compare.first_difference([1, 2, 3], [1, 2, 3]) is None
    assert compare.first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert compare.first_difference([1, 2], [1, 2, 3]) == 2 == compare.first_difference([1, 2, 3], [1, 2])
    assert compare.first_difference([8], [8.0], same=lambda a, b: type(a) is type(b)) == 0
    assert compare.first_difference([8, "a"], [8.0, "b"], same=compare.same_value) == 1
    assert compare.item_at([1, 2], 1) == 2 and compare.item_at([1, 2], 2, "end") == "end"
    assert compare.item_at([1, 2], None, "none") == "none"
