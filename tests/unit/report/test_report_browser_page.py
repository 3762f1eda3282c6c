"""The query browser's section of report.html (rerank_study.report.report_browser_page): the data embedded
so that they read back exactly, the named queries linked (a line written by hand), nothing loaded from
outside the page."""

from test_report_browser import Links, data

from rerank_study.report.report_browser_page import named_line, section


def test_the_section_links_the_named_queries_and_embeds_the_data_safely():
    d = data()
    d["docs"]["b"] = ["</script><script>alert(1)</script>", "x"]
    text = section(d)
    assert "</script><script>alert" not in text
    seen = Links()
    seen.feed(text)
    assert seen.data == d  # read back exactly, the script-ending text included
    assert seen.links == ["#query=q2", "#query=q1", "#outcome=repaired", "#query=q1", "#outcome=weakened"]


def test_the_section_is_a_fixed_function_of_the_data_and_loads_nothing():
    text = section(data())
    assert text == section(data())
    assert not any(s in text for s in ("http", " src=", "fetch(", "XMLHttpRequest", "import("))


def test_the_named_line_links_each_named_query_and_counts_each_outcome():
    named = {"worst": ["q2", "q1"], "repaired": [], "weakened": ["q<3", "a&b=c#d%"]}
    line = named_line({"primary": ["blend-ce", "blend", "ce"], "named": named})
    assert line == (
        '<p id="qb-named">Named in the report: worst 3 of blend-ce: <a href="#query=q2">q2</a>, '
        '<a href="#query=q1">q1</a>; the CE losses the blend repairs (<a href="#outcome=repaired">0</a>): '
        'none; the CE wins it weakens (<a href="#outcome=weakened">2</a>): '
        '<a href="#query=q%3C3">q&lt;3</a>, <a href="#query=a%26b%3Dc%23d%25">a&amp;b=c#d%</a>.</p>')
