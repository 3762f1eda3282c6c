"""The two kinds of report.md line the audit cannot write out in full, beside the lines it writes exactly
(plain strings): a provenance table row (``Row``) and a line with one declared part (``Free``).
``report_check`` compares each with report.md's line."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Row(NamedTuple):
    """``| label | value |`` (the value in backticks when ``code``). ``value`` None: declared provenance the
    audit cannot recompute (``why`` says what it is) - the label must be there with a value."""

    label: str
    value: str | None
    code: bool = True
    why: str = ""

    def text(self) -> str:
        val = f"<any value: {self.why or 'declared provenance'}>" if self.value is None else self.value
        return f"| {self.label} | {f'`{val}`' if self.code else val} |"


class Free(NamedTuple):
    """``prefix`` + a part matching ``pattern`` + ``suffix``: the part is declared (``why``); every line of
    one ``group`` must show the same part; ``verify(part)`` returns what is wrong with it, or None."""

    prefix: str
    suffix: str
    pattern: str
    why: str
    group: str = ""
    verify: Callable[[str], str | None] | None = None

    def text(self) -> str:
        return f"{self.prefix}<{self.why}>{self.suffix}"


def row(label: str, value, code: bool = True, why: str = "") -> Row:
    return Row(label, None if value is None else str(value), code, why)
