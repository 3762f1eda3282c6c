"""How the audit compares, each way in one place: two values as values (``same_value``), a number at the
precision a page shows it with (``numbers`` of a text, ``same_number``), and where two sequences first differ
(``first_difference``, ``item_at``: what a failure shows of each side)."""

from __future__ import annotations

import re

NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")
SHAPE = re.compile(r"[-−]?\d+(?:\.(\d+))?(?:[eE]([-+]?\d+))?")


def same_value(a, b) -> bool:
    """Equal values: numbers by value (``8`` is ``8.0``, ``-0.0`` is ``0.0``), a flag only to a flag (a
    boolean field must be a JSON boolean), records and lists item by item. A recomputed NaN equals
    nothing."""
    number = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, number) and isinstance(b, number):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def numbers(text: str) -> list[str]:
    """The numbers a text shows, as written, in order."""
    return NUMBER.findall(text)


def same_number(shown: str, value) -> bool:
    """``shown`` is ``value`` at the precision it is shown with (half a unit in its last place); a whole
    number of fewer than 3 digits only when it is exact (``1`` is not 0.6)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    m = SHAPE.fullmatch(shown)
    x = float(shown.replace("−", "-"))
    if m is None or x == value:
        return m is not None
    decimals, exponent = len(m.group(1) or ""), int(m.group(2) or 0)
    digits = re.sub(r"[^0-9]", "", shown.split("e")[0].split("E")[0]).lstrip("0")
    precise = decimals - exponent >= 1 or len(digits) >= 3
    return precise and abs(x - value) <= 0.5 * 10.0 ** (exponent - decimals) * (1 + 1e-9)


def first_difference(want, got, same=None) -> int | None:
    """Where the sequences ``want`` and ``got`` first differ: the index of the first pair that is not the same
    (``same(a, b)``; by default ``a == b``), else the shorter one's length when one ends before the other;
    None when they are the same item by item and in length."""
    for i, (a, b) in enumerate(zip(want, got)):
        if not (a == b if same is None else same(a, b)):
            return i
    return None if len(want) == len(got) else min(len(want), len(got))


def item_at(items, i: int | None, past_end=None):
    """``items[i]``, what a failure shows of one side at the first difference ``i``; ``past_end`` when that
    side has no item there (it ended first, or there is no difference)."""
    return items[i] if i is not None and i < len(items) else past_end
