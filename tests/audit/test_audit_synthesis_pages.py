"""The synthesis audit's check of its renderings (scripts/audit/synthesis/synthesis_pages.py) on hand-written
pages: a page of the markdown passes; a changed number, an address outside the page, other figure bytes, a
pooled line that does not show synthesis.json's pooled answer or a missing rendering fail, naming the item."""

from __future__ import annotations

import base64
import hashlib

from conftest import audit_module

P = audit_module("synthesis.synthesis_pages")
POOLED = ("Pooled primary Δ (datasets weighting, declared before results): **0.125000**, interval "
          "[0.050000, 0.200000] from 400 stratified grouped bootstrap replicates (seed 7). The plain mean "
          "of the datasets' means is 0.125000.")
MD = f"## Across datasets\n\n{POOLED}\n\nI² = 0.912 on 2 df.\n\n| row | n |\n|---|---|\n| alpha | 8 |\n\n" \
     "![forest plot](forest.png)\n"
# synthesis.json's pooled answer, as the line above shows it (by hand)
GOT = {"pooled": {"estimate": 0.1250001, "interval": [0.05, 0.2], "B": 400, "seed": 7},
       "plain_mean_of_means": 0.1250001}
PNG = b"\x89PNG\r\n\x1a\nhand-made"
URI = "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")
POOLED_HTML = POOLED.replace("**0.125000**", "<strong>0.125000</strong>")  # as a browser is given it
PAGE = ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<title>Across datasets 3</title>\n'
        '<style>body{margin:2rem}</style>\n</head>\n<body>\n<h2>Across datasets</h2>\n'
        f'<p>{POOLED_HTML}</p>\n'
        '<p>I² = 0.912 on 2 df.</p>\n<table><tr><th>row</th><th>n</th></tr>'
        f'<tr><td>alpha</td><td>8</td></tr></table>\n<p><img src="{URI}" alt="forest plot"></p>\n</body>\n'
        '</html>\n')


def items(page: str, md: str = MD, png: bytes = PNG) -> list[str]:
    return [item for item, _, _ in P.page_problems(page, md, png)]


def test_a_page_of_the_markdown_passes():
    assert P.page_problems(PAGE, MD, PNG) == []
    # the numbers a reader sees: the head's and the tags' are not among them; adjacent cells stay apart
    assert P.body_numbers(PAGE) == ["0.125000", "0.050000", "0.200000", "400", "7", "0.125000", "0.912", "2",
                                    "8"]


def test_a_changed_number_fails_naming_the_first_that_differs():
    (problem,) = P.page_problems(PAGE.replace("0.200000", "0.300000"), MD, PNG)
    assert problem == ("the numbers of synthesis.md (the first to differ: number 3)",
                       ["0.200000", "400", "7"], ["0.300000", "400", "7"])
    assert items(PAGE.replace("<td>8</td>", "")) == [
        "the numbers of synthesis.md (the first to differ: number 9)"]


def test_the_pooled_line_of_synthesis_md_must_show_synthesis_jsons_pooled_answer():
    assert P.pooled_problems(MD, GOT) == []
    item = "the line 'Pooled primary Δ': estimate, interval, B, seed, plain mean of means"
    # 0.125000 shows 0.1250001 at 6 decimals, not 0.1250006
    moved = {**GOT, "pooled": {**GOT["pooled"], "estimate": 0.1250006}}
    assert P.pooled_problems(MD, moved) == [(item, [0.1250006, 0.05, 0.2, 400, 7, 0.1250001],
                                             ["0.125000", "0.050000", "0.200000", "400", "7", "0.125000"])]
    assert [i for i, _, _ in P.pooled_problems(MD.replace("seed 7", "seed 8"), GOT)] == [item]
    assert P.pooled_problems(MD.replace(POOLED, "no pooled line"), GOT) == [
        ("the line 'Pooled primary Δ' (the pooled answer)", "one line", 0)]


def test_an_address_outside_the_page_fails():
    linked = PAGE.replace("</body>", '<link href="https://cdn.example/x.css"></body>')
    assert items(linked) == ["self-contained (src and href)", "self-contained (no address outside the page)"]
    assert items(PAGE.replace(URI, "forest.png")) == ["self-contained (src and href)", "forest.png inlined"]


def test_other_figure_bytes_fail():
    assert items(PAGE, png=PNG + b"!") == ["forest.png inlined"]


def test_a_missing_rendering_fails_naming_the_file_and_the_fix(tmp_path):
    Audit = audit_module("core.bookkeeping").Audit
    for name in P.RENDERINGS:
        (tmp_path / name).write_bytes(PNG if name == "forest.png" else
                                      (PAGE if name == "synthesis.html" else MD).encode("utf-8"))
    au = Audit()
    listed = P.check_pages(au, tmp_path, GOT)
    assert not au.failed and sorted(listed) == sorted(P.RENDERINGS)
    assert listed["synthesis.md"] == hashlib.sha256(MD.encode("utf-8")).hexdigest()
    (tmp_path / "synthesis.html").unlink()
    au = Audit()
    P.check_pages(au, tmp_path, GOT)
    (failure,) = au.checks["synthesis_pages"]["failures"]
    assert failure["file"] == str(tmp_path / "synthesis.html") and failure["found"] == "missing"
    assert "rerun `snakemake synthesis`" in failure["expected"]
