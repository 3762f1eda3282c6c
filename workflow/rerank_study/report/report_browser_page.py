"""The query browser's part of report.html: its section (a fixed function of the embedded data), its style and
its script (vanilla JavaScript, nothing loaded from outside the page). The page's state is its URL fragment
(``#sort=delta&dir=asc&outcome=repaired&group=G001&query=<id>&depth=all``): a link or a reload shows the same
view."""

from __future__ import annotations

import html
from collections.abc import Mapping
from urllib.parse import quote

from .report_browser import embedded_json

HEADING = "Query browser"
STYLE = (".qb-w{background:#e6f4e6}.qb-l{background:#fbe4e4}.qb-t{background:#f4f4f4}"
         "#qb-query{border:2px solid #888;padding:.2rem .5rem;margin:1rem 0;width:calc(100vw - 2rem);"
         "position:relative;left:50%;transform:translateX(-50%);box-sizing:border-box;background:#fff}"
         # the three rankings: three equal columns of the view, each table exactly its column's width (fixed
         # layout: the widths of its <col>s, the document takes the rest; a long title or text ends in an
         # ellipsis after two lines, whole in its tooltip); one below the other in a narrow window
         ".qb-rankings{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:.5rem;align-items:start}"
         "@media (max-width:1100px){.qb-rankings{grid-template-columns:minmax(0,1fr)}}"
         ".qb-rankings table{font-size:.7rem;width:100%;table-layout:fixed;margin:0}"
         ".qb-rankings th,.qb-rankings td{padding:.1rem .2rem;vertical-align:top;overflow-wrap:anywhere}"
         ".qb-c-rank{width:2.4rem}.qb-c-in{width:4.3rem}.qb-c-judgement{width:4.8rem}.qb-c-score{width:5.9rem}"
         ".qb-rel td{background:#fff1b8}.qb-rel td:first-child{font-weight:700}"
         ".qb-doc,.qb-rankings th:nth-child(2){text-align:left!important}.qb-doc strong{font-weight:600}"
         ".qb-clamp{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden}"
         "#qb-missing .qb-doc{min-width:9rem}"
         ".qb-controls{display:flex;gap:1rem;flex-wrap:wrap;align-items:center}"
         "th.qb-sort{cursor:pointer;text-decoration:underline dotted}.qb-up{color:#070}.qb-down{color:#b00}"
         "caption{font-weight:700;text-align:left}#qb-table td:nth-child(2){text-align:left;min-width:14rem}")

SCRIPT = r"""
(function () {
"use strict";
var D = JSON.parse(document.getElementById("qb-data").textContent), M = D.methods, Q = D.queries, byId = {};
Q.forEach(function (q, i) { q.index = i; byId[q.qid] = q; });
function el(tag, attrs, kids) {
  var e = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
  (kids || []).forEach(function (k) {
    e.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
  });
  return e;
}
function state() {
  var s = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (p) {
    var i = p.indexOf("=");
    if (i > 0) { s[decodeURIComponent(p.slice(0, i))] = decodeURIComponent(p.slice(i + 1)); }
  });
  return s;
}
function href(changes) {
  var s = state();
  Object.keys(changes).forEach(function (k) { s[k] = changes[k]; });
  var keys = Object.keys(s).filter(function (k) { return s[k] !== null && s[k] !== ""; }).sort();
  return "#" + keys.map(function (k) {
    return encodeURIComponent(k) + "=" + encodeURIComponent(s[k]);
  }).join("&");
}
function link(text, changes, attrs) {
  var a = el("a", attrs || {}, [text]);
  a.href = href(changes);
  return a;
}
function num(x, d) { return x === null ? "NA" : x.toFixed(d); }
function sci(x) { return x === null ? "NA" : x.toPrecision(6); }
function per(prefix, label, field) {
  return M.map(function (m, i) {
    return [prefix + m, label(m), function (q) { return q[field][i]; }];
  });
}
var COLS = [
  ["qid", "query", function (q) { return q.qid; }],
  ["text", "text", function (q) { return q.text; }],
  ["group", "group (size)", function (q) { return q.group; }]
].concat(per("", function (m) { return m + " " + D.metric; }, "metric"), [
  ["delta", "Δ " + D.primary[0], function (q) { return q.delta; }],
  ["absdelta", "|Δ|", function (q) { return Math.abs(q.delta); }]
], per("first_", function (m) { return "first relevant (" + m + ")"; }, "first_rel"), [
  ["coverage", "candidate coverage", function (q) { return q.coverage; }],
  ["tau", "Kendall τ (ce, blend)", function (q) { return q.tau; }],
  ["outcome", "outcome", function (q) { return q.outcome; }]
]);
function cell(key, q, v) {
  if (key === "qid") { return link(q.qid, {query: q.qid}, {"class": "qb-open"}); }
  if (key === "group") { return q.group + " (" + q.group_size + ")"; }
  if (typeof v === "number") {
    return key.indexOf("first_") === 0 ? String(v) : num(v, key === "tau" ? 3 : 4);
  }
  return v === null ? "none" : v;
}
function sorted(s) {
  var col = COLS.filter(function (c) { return c[0] === s.sort; })[0], sign = s.dir === "desc" ? -1 : 1;
  var rows = Q.filter(function (q) {
    return (!s.outcome || q.outcome === s.outcome) && (!s.group || q.group === s.group);
  });
  return rows.sort(function (a, b) {
    if (!col) { return a.index - b.index; }
    var x = col[2](a), y = col[2](b);
    if (x === null || y === null) { return x === y ? a.index - b.index : (x === null ? 1 : -1); }
    return (x < y ? -sign : (x > y ? sign : 0)) || a.index - b.index;
  });
}
function select(name, options, s) {
  var e = el("select", {id: "qb-" + name}, options.map(function (o) {
    var opt = el("option", {value: o[0]}, [o[1]]);
    opt.selected = (s[name] || "") === o[0];
    return opt;
  }));
  e.onchange = function () { var c = {}; c[name] = e.value; location.hash = href(c); };
  return el("label", {}, [name + " ", e]);
}
function controls(s, n) {
  var groups = {};
  Q.forEach(function (q) { groups[q.group] = q.group_size; });
  var options = Object.keys(groups).sort().map(function (g) { return [g, g + " (" + groups[g] + ")"]; });
  return el("div", {"class": "qb-controls"}, [
    select("outcome", [["", "all"], ["repaired", "blend repairs a CE loss"],
                       ["weakened", "blend weakens a CE win"], ["tie", "ties (Δ = 0)"],
                       ["other", "other"]], s),
    select("group", [["", "all"]].concat(options), s),
    link("most different first (Kendall τ ascending)", {sort: "tau", dir: "asc"}, {id: "qb-most-different"}),
    link("largest |Δ| first", {sort: "absdelta", dir: "desc"}, {id: "qb-largest-delta"}),
    el("span", {id: "qb-count"}, [n + " of " + Q.length + " queries"])]);
}
function overview(s) {
  var rows = sorted(s);
  var head = el("tr", {}, COLS.map(function (c) {
    var mark = s.sort === c[0] ? (s.dir === "desc" ? " ▼" : " ▲") : "";
    var th = el("th", {"class": "qb-sort", "data-key": c[0]}, [c[1] + mark]);
    th.onclick = function () {
      location.hash = href({sort: c[0], dir: s.sort === c[0] && s.dir !== "desc" ? "desc" : "asc"});
    };
    return th;
  }));
  var body = rows.map(function (q) {
    return el("tr", {"class": "qb-" + q.wtl.toLowerCase(), "data-qid": q.qid}, COLS.map(function (c) {
      return el("td", {}, [cell(c[0], q, c[2](q))]);
    }));
  });
  var table = el("table", {id: "qb-table"}, [el("thead", {}, [head]), el("tbody", {}, body)]);
  return [controls(s, rows.length), table];
}
function doc(id) { return D.docs[id] || ["", ""]; }
function judgement(g) {
  if (g === null) { return "not judged"; }
  return (g > 0 ? "relevant (" : "judged not relevant (") + g + ")";
}
function arrow(own, other) {
  if (other === own) { return "=" + other; }
  return el("span", {"class": other < own ? "qb-up" : "qb-down"}, [(other < own ? "↑" : "↓") + other]);
}
function td(kids, attrs) { return el("td", attrs || {}, kids); }
function ranking(q, mi, depth) {
  var order = q.ranked.map(function (c, i) { return {c: c, r: [i + 1, c[1], c[2]]}; });
  order.sort(function (a, b) { return a.r[mi] - b.r[mi]; });
  var others = [0, 1, 2].filter(function (j) { return j !== mi; });
  var head = ["rank", "document", "in " + M[others[0]] + " / " + M[others[1]], "judgement",
              D.score_label + " / blend score"];
  var body = order.slice(0, depth).map(function (o) {
    var d = doc(o.c[0]), g = o.c[5];
    var attrs = {"class": g !== null && g > 0 ? "qb-rel" : "", "data-doc": o.c[0],
                 "data-grade": g === null ? "" : String(g)};
    var name = td([el("strong", {"class": "qb-clamp"}, [o.c[0] + " " + d[0]]),
                   el("span", {"class": "qb-clamp"}, [d[1]])],
                  {"class": "qb-doc", title: o.c[0] + " " + d[0] + "\n" + d[1]});
    return el("tr", attrs, [td([String(o.r[mi])]), name,
      td(others.map(function (j) { return el("div", {}, [M[j] + " ", arrow(o.r[mi], o.r[j])]); })),
      td([judgement(g)]), td([el("div", {}, [sci(o.c[3])]), el("div", {}, [sci(o.c[4])])])]);
  });
  return el("table", {"data-method": M[mi]}, [
    el("caption", {}, [M[mi]]),
    el("colgroup", {}, ["qb-c-rank", "qb-c-doc", "qb-c-in", "qb-c-judgement", "qb-c-score"].map(function (c) {
      return el("col", {"class": c});
    })),
    el("thead", {}, [el("tr", {}, head.map(function (h) { return el("th", {}, [h]); }))]),
    el("tbody", {}, body)]);
}
function missing(q) {
  if (!q.missing.length) { return el("p", {id: "qb-missing"}, ["none"]); }
  return el("table", {id: "qb-missing"}, [el("tbody", {}, q.missing.map(function (m) {
    var d = doc(m[0]);
    return el("tr", {"data-doc": m[0], "data-grade": String(m[1])},
              [td([m[0]]), td([judgement(m[1])]), td([d[0] + " — " + d[1]], {"class": "qb-doc"})]);
  }))]);
}
function query(q, s) {
  var all = s.depth === "all", depth = all ? q.ranked.length : 10;
  var mates = Q.filter(function (o) { return o.group === q.group && o.qid !== q.qid; });
  var facts = M.map(function (m, i) { return m + " " + D.metric + " " + num(q.metric[i], 4); }).join(", ") +
    "; Δ " + D.primary[0] + " " + num(q.delta, 4) + " (" + q.wtl + "); Kendall τ (ce, blend) " +
    num(q.tau, 3) + "; outcome " + q.outcome + "; candidate coverage " + q.coverage + " ";
  return [el("h3", {}, ["Query " + q.qid + ": " + q.text]),
    el("p", {}, [facts, link(all ? "show the top 10" : "show all " + q.ranked.length,
                             {depth: all ? "" : "all"}, {id: "qb-depth"}),
                 " ", link("close", {query: ""}, {id: "qb-close"})]),
    el("div", {"class": "qb-rankings"}, [0, 1, 2].map(function (mi) { return ranking(q, mi, depth); })),
    el("h4", {}, ["Judged relevant documents NOT among the candidates (they count in the ideal DCG)"]),
    missing(q),
    el("h4", {}, ["Evidence group " + q.group + " (" + q.group_size + " queries): the others"]),
    el("p", {id: "qb-group"}, mates.length ? mates.map(function (o) { return link(o.qid, {query: o.qid}); })
                                           : ["none"])];
}
function replace(id, kids) {
  var e = document.getElementById(id);
  e.textContent = "";
  kids.forEach(function (k) { e.appendChild(k); });
  return e;
}
function render() {
  var s = state(), q = byId[s.query];
  replace("qb-query", q ? query(q, s) : []).hidden = !q;
  replace("qb-overview", overview(s));
  if (q) { document.getElementById("qb-query").scrollIntoView(); }
}
[].forEach.call(document.querySelectorAll("h2"), function (h) {  // the report's worst 3: links
  var t = h.nextElementSibling;
  if (h.textContent.indexOf("Worst 3 queries") !== 0 || !t || t.tagName !== "TABLE") { return; }
  [].forEach.call(t.querySelectorAll("tbody tr td:first-child"), function (c) {
    var id = c.textContent;
    if (byId[id]) { c.textContent = ""; c.appendChild(link(id, {query: id})); }
  });
});
window.addEventListener("hashchange", render);
render();
})();
"""


def _links(qids) -> str:
    """Each query id as a link that opens it in the browser (none: "none"); the id percent-encoded in the
    address, as the page's script decodes it (an id with ``&``, ``=``, ``#`` or ``%`` keeps its link)."""
    return ", ".join(f'<a href="#query={quote(q, safe="")}">{html.escape(q)}</a>' for q in qids) \
        or "none"


def named_line(data: Mapping) -> str:
    """The queries report.md names, linked into the browser: the worst 3 of the primary comparison, the CE
    losses the blend repairs, the CE wins it weakens."""
    named = data["named"]
    return (f"<p id=\"qb-named\">Named in the report: worst 3 of {html.escape(data['primary'][0])}: "
            f"{_links(named['worst'])}; the CE losses the blend repairs "
            f"(<a href=\"#outcome=repaired\">{len(named['repaired'])}</a>): {_links(named['repaired'])}; "
            f"the CE wins it weakens (<a href=\"#outcome=weakened\">{len(named['weakened'])}</a>): "
            f"{_links(named['weakened'])}.</p>")


def section(data: Mapping) -> str:
    """The browser's section of report.html (after the per-query table)."""
    return (f"<h2 id=\"query-browser\">{HEADING}</h2>\n"
            "<p>Every analysed query; click a column to sort, a query to see its three rankings side by side "
            "(the view is the address's #fragment: copy it to share). Texts are cut to "
            f"{data['cut']['query']} (query), {data['cut']['title']} (title) and {data['cut']['text']} "
            "(document) characters.</p>\n"
            f"{named_line(data)}\n<noscript><p>The browser needs JavaScript; its data are the JSON of the "
            "element qb-data.</p></noscript>\n<div id=\"qb-query\" hidden></div>\n"
            "<div id=\"qb-overview\"></div>\n"
            f"<script type=\"application/json\" id=\"qb-data\">{embedded_json(data)}</script>\n"
            f"<script>{SCRIPT}</script>\n")
