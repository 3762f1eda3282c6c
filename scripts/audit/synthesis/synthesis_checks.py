"""The audit of a synthesis across datasets (``python3 -I -S scripts/audit --synthesis FOLDER --run RUN
...``): every number of FOLDER/synthesis.json recomputed by the audit's own code (``synthesis_math``) from
the studies' own files - each run's summary.json, per_query.tsv and groups.tsv, as the manifest its PASSING
audit vouches for lists them - and from the saved stratified index matrices (FOLDER/indices/<study>.tsv,
themselves regenerated from the declared seed). The declared block is anchored OUTSIDE the synthesis: the
committed config with the invocation's config files over it.

Checks (recorded like a run's, FAIL CLOSED): ``synthesis_keys`` (every key of synthesis.json is one this audit
declares, none missing: a key it does not know fails, naming it), ``synthesis_inputs`` (each run's audit
passed and vouches for the files read; the studies in synthesis.json's order; one question: the same primary
comparison and metric; two or more datasets, none twice), ``synthesis_declared``, ``synthesis_indices``,
``synthesis_datasets``, ``synthesis_pooled``, ``synthesis_meta``, ``synthesis_consistency``, when the
synthesis has one, ``synthesis_family`` (the declared family of tests, ``synthesis_family``), and
``synthesis_pages`` (the renderings present and listed by sha256, synthesis.html a self-contained page of
synthesis.md with forest.png, synthesis.md's pooled answer synthesis.json's: ``synthesis_pages``). Values are
compared as values; the sums in the documented order are compared EXACTLY, the meta-analysis (iterations, the
t and χ² functions) within META_REL."""

from __future__ import annotations

import math
from pathlib import Path

from anchor.anchors import merged
from core.compare import same_value
from expected.rng import DefaultRng
from read.readers import read_json, read_table, resolve, sha256_of
from read.yamlsubset import read_simple_yaml

from synthesis import synthesis_family, synthesis_pages
from synthesis import synthesis_math as sm

META_REL = 1e-9  # stated tolerance of the meta-analysis: bisection vs iteration, t and χ² by series (~1e-13)
V = None  # a leaf: a value, not a record
SCHEMA = {
    "declared": {"weighting": V, "tau2": V, "B": V, "seed": V, "level": V, "family": V},
    "se_rule": V, "studies": V, "comparison": V, "metric": V, "plain_mean_of_means": V,
    "datasets": [{"dataset": V, "n_queries": V, "n_groups": V, "mean": V, "se": V, "grouped_interval": V,
                  "sign": V}],
    "pooled": {"weighting": V, "estimate": V, "interval": V, "percentiles": V, "B": V, "seed": V},
    "meta_analysis": {k: V for k in ("k", "fixed_effect", "fixed_effect_se", "q", "q_df", "q_pvalue", "i2",
                                     "tau2_dersimonian_laird", "tau2_paule_mandel", "tau2_method",
                                     "random_effect", "random_effect_se", "hksj_interval",
                                     "prediction_interval", "level")},
    "consistency": {"above 0": V, "covers 0": V, "below 0": V},
    "leave_one_out": {"estimates": {"*": V}, "range": V},
    "family": synthesis_family.SCHEMA,
}
OPTIONAL = ("family", "declared.family")  # a synthesis made before the declared family of tests has none
ARTEFACTS = ("summary", "per_query", "groups")


# ------------------------------------------------------------------------------------ the keys --
def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def key_problems(schema, found, path: str = "") -> list[tuple[str, str]]:
    """(key path, problem): each key of ``found`` that ``schema`` does not declare, and each one missing."""
    if schema is V:
        return []
    if isinstance(schema, list):
        if not isinstance(found, list):
            return [(path, "not a list of records")]
        return [p for i, row in enumerate(found) for p in key_problems(schema[0], row, f"{path}[{i}]")]
    if not isinstance(found, dict):
        return [(path, "not a record")]
    out = []
    for key, val in found.items():
        if key in schema or "*" in schema:
            out += key_problems(schema[key] if key in schema else schema["*"], val, _join(path, key))
        else:
            out.append((_join(path, key), "a key the audit does not know"))
    return out + [(_join(path, k), "missing") for k in schema
                  if k != "*" and k not in found and _join(path, k) not in OPTIONAL]


def check_keys(au, file: str, got: dict) -> None:
    problems = key_problems(SCHEMA, got)
    au.check("synthesis_keys", True, file, "every key declared")
    for path, problem in problems:
        au.check("synthesis_keys", False, file, path, "the keys the audit declares (synthesis_checks.SCHEMA)",
                 problem)


# ---------------------------------------------------------------------------- the studies' files --
def study_files(au, run: Path) -> dict:
    """One study run's files, each as its passing audit vouches for it."""
    f = str(run / "audit.json")
    verdict = read_json(run / "audit.json")
    au.check("synthesis_inputs", verdict.get("ok") is True, f, "ok (the study's audit passed)", True,
             verdict.get("ok"))
    manifest_path = run / "manifest.json"
    vouched = (verdict.get("info") or {}).get("manifest_sha256")
    au.check("synthesis_inputs", sha256_of(manifest_path) == vouched, str(manifest_path),
             "sha256 (the manifest its audit passed)", vouched, sha256_of(manifest_path))
    manifest = read_json(manifest_path)
    listed = {a["key"]: a for a in manifest["artefacts"]}
    paths = {key: resolve(listed[key]["path"], run) for key in ARTEFACTS}
    for key, path in paths.items():
        au.check("synthesis_inputs", sha256_of(path) == listed[key]["sha256"], str(path),
                 f"sha256 ({key} as the audited manifest lists it)", listed[key]["sha256"], sha256_of(path))
    study = manifest["settings"]["study"]
    return {"run": run, "name": study["name"], "dataset": study["dataset"],
            "summary": read_json(paths["summary"]),
            "per_query": read_table(paths["per_query"]), "groups": read_table(paths["groups"])}


def deltas_and_groups(s: dict, comparison: str | None = None) -> tuple[list[float], list[int]]:
    """The study's Δ of ``comparison`` (default: its primary) by evidence group (group order; members in
    groups.tsv order)."""
    summary = s["summary"]
    comp, metric = summary["comparisons"][comparison or summary["primary"]], summary["metric"]
    d = {r["qid"]: float(r[f"{comp['a']}_{metric}"]) - float(r[f"{comp['b']}_{metric}"])
         for r in s["per_query"]}
    members: dict[int, list[str]] = {}
    for g in s["groups"]:
        members.setdefault(int(g["group_index"]), []).append(g["qid"])
    groups = [members[i] for i in sorted(members)]
    if sorted(q for g in groups for q in g) != sorted(d):
        raise ValueError(f"{s['run']}: the evidence groups do not partition the analysed queries")
    return sm.group_sums(d, groups)


def check_family(au, file: str, got: dict, studies: list[dict]) -> None:
    names = [s["name"] for s in studies]
    au.check("synthesis_inputs", got.get("studies") == names, file, "studies (the runs given, in order)",
             names, got.get("studies"))
    asked = sorted({(s["summary"]["primary"], s["summary"]["metric"]) for s in studies})
    au.check("synthesis_inputs", len(asked) == 1, file, "one question (primary comparison, metric)",
             "one", asked)
    if len(asked) == 1:
        for key, val in zip(("comparison", "metric"), asked[0]):
            au.check("synthesis_inputs", got.get(key) == val, file, key, val, got.get(key))
    datasets = [s["dataset"] for s in studies]
    au.check("synthesis_inputs", len(datasets) >= 2, file, "two or more datasets", ">= 2", len(datasets))
    au.check("synthesis_inputs", len(set(datasets)) == len(datasets), file, "no dataset twice",
             "distinct datasets", datasets)


# ------------------------------------------------------------------------------ the declaration --
def declared_block(config: Path, config_files) -> dict:
    cfg = read_simple_yaml(config)
    for extra in config_files:
        cfg = merged(cfg, read_simple_yaml(extra))
    return cfg["synthesis"]


def check_declared(au, file: str, got: dict, anchor: dict) -> None:
    au.check("synthesis_declared", same_value(got.get("declared"), anchor), file, "declared", anchor,
             got.get("declared"))
    au.check("synthesis_declared", anchor.get("weighting") in ("datasets", "queries"), file,
             "weighting declared (config synthesis.weighting)", "datasets or queries",
             anchor.get("weighting"))


def matrices(au, folder: Path, studies: list[dict], data, anchor: dict) -> list[list[list[int]]]:
    """The saved index matrices, each compared with the declared seed's draws (datasets in order)."""
    rng, out = DefaultRng(anchor["seed"]), []
    for s, (sums, _) in zip(studies, data):
        path = folder / "indices" / f"{s['name']}.tsv"
        rows = read_table(path)
        saved = [[int(r[f"draw{j}"]) for j in range(len(sums))] for r in rows]
        want = rng.integers_matrix(len(sums), anchor["B"], len(sums))
        au.check("synthesis_indices", [r["replicate"] for r in rows] == [str(b) for b in range(anchor["B"])],
                 str(path), "replicate column", f"0..{anchor['B'] - 1}", len(rows))
        au.check("synthesis_indices", saved == [list(r) for r in want], str(path),
                 "draws (default_rng(seed).integers(0, G, (B, G)), datasets in order)", "equal", "differ")
        out.append(saved)
    return out


# ------------------------------------------------------------------------------ the comparisons --
def close(want, found, rel: float) -> bool:
    """Numbers within ``rel`` (0: by value), lists item by item, anything else by value."""
    if isinstance(want, (list, tuple)) and isinstance(found, (list, tuple)):
        return len(want) == len(found) and all(close(a, b, rel) for a, b in zip(want, found))
    if rel and isinstance(want, float) and isinstance(found, (int, float)) and not isinstance(found, bool):
        return math.isclose(want, found, rel_tol=rel, abs_tol=rel * 1e-3)
    return same_value(want, found)


def compare(au, check: str, file: str, prefix: str, want: dict, found, rel: float = 0.0) -> None:
    found = found if isinstance(found, dict) else {}
    for key, val in want.items():
        au.check(check, close(val, found.get(key), rel), file, f"{prefix}{key}", val, found.get(key))


def dataset_rows(studies, data, intervals) -> list[dict]:
    return [{"dataset": s["dataset"], "n_queries": sum(sizes), "n_groups": len(sums),
             "mean": sm.dataset_mean(sums, sizes), "se": math.sqrt(sm.dataset_variance(sums, sizes)),
             "grouped_interval": list(iv), "sign": sm.sign_of(*iv)}
            for s, (sums, sizes), iv in zip(studies, data, intervals)]


def check_numbers(au, file: str, got: dict, studies, data, mats, anchor: dict) -> None:
    intervals = [s["summary"]["comparisons"][s["summary"]["primary"]]["grouped_interval"] for s in studies]
    found_rows = got.get("datasets") if isinstance(got.get("datasets"), list) else []
    au.check("synthesis_datasets", len(found_rows) == len(studies), file, "datasets (one row per study)",
             len(studies), len(found_rows))
    for i, row in enumerate(dataset_rows(studies, data, intervals)):
        compare(au, "synthesis_datasets", file, f"datasets[{i}].", row, found_rows[i] if i < len(found_rows)
                else {})
    w, level = anchor["weighting"], anchor["level"]
    pcts = [50 * (1 - level), 50 * (1 + level)]
    compare(au, "synthesis_pooled", file, "pooled.", {
        "weighting": w, "estimate": sm.pooled(data, w), "interval": sm.pooled_interval(data, mats, w, pcts),
        "percentiles": pcts, "B": anchor["B"], "seed": anchor["seed"]}, got.get("pooled"))
    means = [sm.dataset_mean(s, n) for s, n in data]
    compare(au, "synthesis_pooled", file, "", {"plain_mean_of_means": sm.pooled(data, "datasets")}, got)
    v = [sm.dataset_variance(s, n) for s, n in data]
    compare(au, "synthesis_meta", file, "meta_analysis.", sm.meta_analysis(means, v, anchor["tau2"], level),
            got.get("meta_analysis"), META_REL)
    compare(au, "synthesis_consistency", file, "", {
        "consistency": sm.consistency(intervals),
        "leave_one_out": sm.leave_one_out([s["dataset"] for s in studies], data, w)}, got)


def check_tests(au, file: str, got: dict, studies: list[dict], anchor: dict) -> None:
    """The declared family of tests (synthesis_family), row by row."""
    names = synthesis_family.shared([list(s["summary"]["comparisons"]) for s in studies])
    by_comparison = {c: [deltas_and_groups(s, c) for s in studies] for c in names}
    want = synthesis_family.family_block(by_comparison, [s["dataset"] for s in studies], anchor)
    found = got.get("family") if isinstance(got.get("family"), dict) else {}
    compare(au, "synthesis_family", file, "family.", {k: v for k, v in want.items() if k != "rows"}, found)
    for key in synthesis_family.PROSE:
        au.check("synthesis_family", isinstance(found.get(key), str), file, f"family.{key}", "a rule (prose)",
                 found.get(key))
    rows = found.get("rows") if isinstance(found.get("rows"), list) else []
    au.check("synthesis_family", len(rows) == len(want["rows"]), file, "family.rows",
             f"{len(want['rows'])} rows", len(rows))
    for i, row in enumerate(want["rows"]):
        compare(au, "synthesis_family", file, f"family.rows[{i}].", row, rows[i] if i < len(rows) else {},
                META_REL)


# ------------------------------------------------------------------------------------ the audit --
def audit_synthesis(folder: Path, runs, au, config: Path, config_files=()) -> dict:
    """Every check of the synthesis in ``folder`` on the study runs ``runs`` (in the synthesis's order);
    returns audit.json's ``info``."""
    file = str(folder / "synthesis.json")
    got = read_json(folder / "synthesis.json")
    check_keys(au, file, got)
    anchor = declared_block(config, config_files)
    check_declared(au, file, got, anchor)
    studies = [study_files(au, Path(r)) for r in runs]
    check_family(au, file, got, studies)
    data = [deltas_and_groups(s) for s in studies]
    mats = matrices(au, folder, studies, data, anchor)
    check_numbers(au, file, got, studies, data, mats, anchor)
    if "family" in got or "family" in anchor:
        check_tests(au, file, got, studies, anchor)
    renderings = synthesis_pages.check_pages(au, folder, got)
    return {"synthesis": str(folder), "runs": [str(r) for r in runs], "studies": [s["name"] for s in studies],
            "synthesis_sha256": sha256_of(folder / "synthesis.json"), "renderings": renderings,
            "anchor": {"config": str(config), "config_files": [str(c) for c in config_files]},
            "declared": anchor}


def main_synthesis(args, write_result) -> int:
    """``--synthesis FOLDER --run RUN ...``: the audit of a synthesis, its verdict in ``--out`` (default
    FOLDER/audit.json); exit 0 when every check passes, 1 when any fails."""
    from core.bookkeeping import MAX_FAILURES_SHOWN, Audit

    au, folder = Audit(), args.synthesis
    out = args.out or folder / "audit.json"
    try:
        info = audit_synthesis(folder, args.run, au, args.config, tuple(args.configfile))
    except Exception as exc:  # noqa: BLE001 - whatever stops the audit is a failed input, recorded
        au.check("synthesis_inputs", False, getattr(exc, "file", "") or str(folder),
                 "the audit could not run", "its inputs present and well formed",
                 f"{type(exc).__name__}: {exc}")
        info = {"synthesis": str(folder), "runs": [str(r) for r in args.run]}
    write_result(out, au.result(info))
    for name, c in au.checks.items():
        print(f"{name:<24} {c['checked']:>6} checked {len(c['failures']):>4} failed")
        for fl in c["failures"][:MAX_FAILURES_SHOWN]:
            print(f"  [{name}] {fl['file']} :: {fl['item']} :: expected {fl['expected']!r} "
                  f"found {fl['found']!r}")
    if au.failed:
        print(f"SYNTHESIS AUDIT FAILED: {', '.join(au.failed)}")
        return 1
    print("SYNTHESIS AUDIT PASSED: every number of synthesis.json recomputed")
    return 0
