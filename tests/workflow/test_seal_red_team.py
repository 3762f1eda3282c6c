"""The seal's red team: the breaks an adversary with the README and the code found against the content-based
seal, each replayed step by step and now refused. (Same world as test_seal_attacks.py: a git checkout of this
code whose own lockfiles/ is a genuine lock folder of the fixture data.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURE, read_json, run_snakemake
from seal_world import commit_all, constructed_freeze, genuine_repo, git, look_at_sealed_file, repo_config

from rerank_study import beir
from rerank_study.errors import SealError
from rerank_study.fileio import write_json
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, ledger, locations, registry, tree

pytestmark = pytest.mark.slow  # runs snakemake


def _frozen(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    cfg = repo_config(repo)
    return repo, dict(cfg, unseal=constructed_freeze(repo, cfg, repo / "lockfiles"))


def test_an_importable_folder_in_the_working_folders_script_cache_is_refused(tmp_path, monkeypatch):
    """Snakemake puts <working folder>/.snakemake/scripts first on every script job's path: a copy of the
    library planted there would replace the seal's own ledger code in the opening."""
    repo, cfg = _frozen(tmp_path)
    wd = tmp_path / "elsewhere"
    (wd / ".snakemake/scripts/rerank_study").mkdir(parents=True)
    monkeypatch.chdir(wd)  # the guard runs in the working folder snakemake --directory names
    with pytest.raises(SealError, match=r"elsewhere/.snakemake/scripts/rerank_study is importable by "
                                        r"every script job"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)


def test_a_tracked_symbolic_link_is_refused_and_the_method_hashes_what_it_points_to(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    script = repo / "workflow/scripts/fetch_sealed_qrels.py"
    (repo / "outside").mkdir()
    shutil.move(script, repo / "outside/fetch_sealed_qrels.py")
    os.symlink("../../outside/fetch_sealed_qrels.py", script)
    commit_all(repo, "a method file as a link")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    with pytest.raises(SealError, match=r"fetch_sealed_qrels.py \(a symbolic link: the seal cannot vouch "
                                        r"for its target"):
        guard.check_unseal(dict(cfg, unseal=sha), repo / "lockfiles", repo)
    # the target's bytes are the method's: an edit of the target is a changed method
    before = guard.check_frozen
    (repo / "outside/fetch_sealed_qrels.py").write_text("# no ledger line\n")
    with pytest.raises(SealError, match=r"method changed .*workflow/scripts/fetch_sealed_qrels.py "
                                        r"\(changed\)"):
        before(cfg, repo / "lockfiles", repo, read_json(repo / "lockfiles/protocol.json"))


def test_an_output_folder_inside_the_code_exempts_nothing(tmp_path):
    """results=workflow/<name> would make an untracked package importable from every job's path: an output
    folder is left out of the walk only at the top level of the checkout."""
    repo, cfg = _frozen(tmp_path)
    out = repo / "workflow" / "json"
    out.mkdir()
    (out / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    with pytest.raises(SealError, match=r"workflow/json/__init__.py \(not committed\)"):
        guard.check_unseal(dict(cfg, results=str(out)), repo / "lockfiles", repo)
    shutil.rmtree(out)
    (repo / "out").mkdir()
    (repo / "out" / "generated.txt").write_text("an output\n")
    assert guard.check_unseal(dict(cfg, results=str(repo / "out")), repo / "lockfiles", repo)["opening"] == 1


def test_an_edited_content_hash_neither_renames_the_sealed_set_nor_frees_it_for_a_new_protocol(tmp_path):
    repo, cfg = _frozen(tmp_path)
    look_at_sealed_file(repo, cfg["unseal"], 1)
    commit_all(repo, "opening 1 started")
    lock = repo / "lockfiles"
    pins, derived = read_json(lock / "data_pins.json"), read_json(lock / "derived_pins.json")
    pins["files"]["qrels/test.tsv"]["content_sha256"] = "f" * 64
    derived["sealed_set"]["content_sha256"] = "f" * 64
    write_json(lock / "data_pins.json", pins)
    write_json(lock / "derived_pins.json", derived)
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):
        (lock / name).unlink()
    commit_all(repo, "a new preregistration, edited pins")
    retuned = dict(repo_config(repo), blend={"k": 20}, threshold=0.005,
                   resources=str(tmp_path / "fresh-resources"))
    with pytest.raises(SealError, match=r"REFUSED to freeze a protocol: .* records 1 opening\(s\) of "
                                        r"this sealed set"):
        seal_freeze.freeze(retuned, lock, tmp_path / "no-run", repo)
    sha2 = constructed_freeze(repo, retuned, lock)
    with pytest.raises(SealError, match="under a different protocol"):
        guard.check_unseal(dict(retuned, unseal=sha2), lock, repo)


def test_a_pinned_content_hash_is_checked_against_the_verified_bytes(tmp_path):
    """Every verification of a qrels file checks its content hash too: an edited content_sha256 cannot ride on
    a correct file sha256."""
    from rerank_study.acquire import check_file
    from rerank_study.errors import PinMismatchError
    from rerank_study.pins import DataPins

    pins_path = tmp_path / "pins.json"
    pins = read_json(FIXTURE.parent / "lockfiles/data_pins.json")
    write_json(pins_path, pins)
    checked = check_file(FIXTURE / "qrels/test.tsv", "qrels/test.tsv", DataPins.load(pins_path), "fixture")
    assert checked.data == (FIXTURE / "qrels/test.tsv").read_bytes()  # the checked bytes, for the reader
    pins["files"]["qrels/test.tsv"]["content_sha256"] = "f" * 64
    write_json(pins_path, pins)
    with pytest.raises(PinMismatchError, match="content_sha256"):
        check_file(FIXTURE / "qrels/test.tsv", "qrels/test.tsv", DataPins.load(pins_path), "fixture")


def test_a_look_through_a_study_folder_deleted_later_still_counts_in_a_fresh_clone(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    y = repo / "lockfiles/studies/y"
    shutil.copytree(repo / "lockfiles", y, ignore=shutil.ignore_patterns("studies", *locations.SEAL_RECORDS))
    study = repo / "config/studies/y.yaml"
    study.write_text("study:\n  name: y\n  dataset: scifact\n  qrels_dev: qrels/train.tsv\n  qrels_confirm: "
                     "qrels/test.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n  label_index: null\n"
                     "  candidates: frozen\nlockdir: ../../lockfiles/studies/y\n")
    commit_all(repo, "study y")
    from rerank_study import studies

    ycfg = studies.study_config(repo_config(repo), study)
    sha_y = constructed_freeze(repo, ycfg, y)
    run_snakemake(repo, config={"studies": f"[{study}]", "unseal": sha_y, "scorer": "pinned"},
                  snakefile=repo / "Snakefile",
                  targets=(f"{repo}/results/y/confirm-{sha_y[:12]}-1/sealed/qrels/test.tsv",))
    commit_all(repo, "y opened")
    git(repo, "rm", "-rq", "lockfiles/studies/y", "config/studies/y.yaml")
    commit_all(repo, "drop study y")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    ccfg = dict(repo_config(clone), threshold=0.005)
    with pytest.raises(SealError, match=r"REFUSED to freeze a protocol: [0-9a-f]{12}:lockfiles/studies/y/"
                                        r"confirmation_ledger.jsonl records 1 opening"):
        seal_freeze.freeze(ccfg, clone / "lockfiles", tmp_path / "no-run", clone)


def _copy_dataset(tmp: Path) -> Path:
    """The fixture's data as another dataset: one document added, each sealed query's text with an invisible
    zero-width space appended, the sealed file + one row as development judgements."""
    data = tmp / "copydata"
    shutil.copytree(FIXTURE, data)
    with open(data / "corpus.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "pad", "title": "", "text": "padding"}) + "\n")
    sealed = set(beir.read_qrels(FIXTURE / "qrels/test.tsv"))
    lines = []
    for line in (FIXTURE / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] in sealed:
            q["text"] += "\u200b"
        lines.append(json.dumps(q))
    (data / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    train = (FIXTURE / "qrels/train.tsv").read_bytes().split(b"\r\n")[1]
    (data / "qrels/dev.tsv").write_bytes((FIXTURE / "qrels/test.tsv").read_bytes() + train + b"\r\n")
    return data


def test_a_copy_of_the_sealed_set_under_another_name_is_recognised(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    real = registry.load_sealed_set(repo / "lockfiles")
    data = _copy_dataset(tmp_path)
    # the text rule sees through the zero-width space
    queries = beir.read_queries(data / "queries.jsonl")
    assert {registry.text_sha256(queries[q]) for q in real.query_ids} == set(real.text_sha256)
    # the corpus sketch sees one corpus in the copy with a document added
    sketch = registry.corpus_sketch(registry.document_ids(data / "corpus.jsonl"))
    assert real.same_corpus("scifactcopy", "other", sketch)
    side = registry.DevelopmentSide(tmp_path / "copy-lock", "scifactcopy", "other", sketch=sketch,
                                    query_ids={"development "
                                               "qrels": set(beir.read_qrels(data / "qrels/dev.tsv")),
                                               "development split": set(real.query_ids)})
    registry.add_texts(side, queries)
    found = registry.conflicts(side, [real])
    assert any("development qrels" in f and "sealed query id" in f for f in found), found
    assert any("development split" in f for f in found) and any("have the text of a sealed query" in f
                                                                for f in found)


def test_the_text_rule_folds_what_a_reader_does_not_see():
    a = registry.normalised_text
    # fullwidth C (NFKC -> C), e + combining acute (dropped), zero-width space (dropped), no-break space (a
    # space)
    assert a("Ｃafe\u0301\u200b  Claim\u00a0x") == a("cafe claim x") == "cafe claim x"
    assert a("A\tb\nc") == "a b c" and a("abc") != a("abd")


def test_the_corpus_sketch_estimates_jaccard():
    ids = [str(i) for i in range(1000)]
    assert registry.sketch_similarity(registry.corpus_sketch(ids),
                                      registry.corpus_sketch(ids + ["pad"])) > 0.95
    half = registry.corpus_sketch(ids[:500] + [f"x{i}" for i in range(500)])  # true Jaccard 500/1500 = 1/3
    assert abs(registry.sketch_similarity(registry.corpus_sketch(ids), half) - 1 / 3) < 0.15
    assert registry.sketch_similarity([], registry.corpus_sketch(ids)) == 0.0


# ------------------------------------------------------------------------------------- the second round --
def _no_look(repo: Path) -> None:
    assert [e["event"] for e in ledger.read_ledger(repo / "lockfiles")] == ["frozen"]
    assert not (repo / "resources/cache/sealed").exists()


def test_a_launch_folder_on_the_module_path_is_refused_before_the_guard_imports_anything(tmp_path):
    """`python -m snakemake` puts the folder it is started from first on sys.path: a statistics.py there would
    replace the standard library's for the guard itself."""
    import sys

    repo, cfg = _frozen(tmp_path)
    launch = tmp_path / "launch"
    launch.mkdir()
    (launch / "statistics.py").write_text("raise SystemExit('shadowed')\n")
    proc = look_at_sealed_file(repo, cfg["unseal"], 1, check=False,
                               run_kw={"launcher": (sys.executable, "-m", "snakemake"), "cwd": launch})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "can load code from outside the interpreter" in out and str(launch) in \
        out, out[-2000:]
    _no_look(repo)


@pytest.mark.parametrize("variable", ["BASH_ENV", "PYTHONWARNINGS", "PYTHONSTARTUP", "LD_PRELOAD"])
def test_a_variable_that_adds_code_to_a_process_is_refused(tmp_path, variable):
    repo, cfg = _frozen(tmp_path)
    hook = tmp_path / "hook.sh"
    hook.write_text("export PYTHONPATH=/tmp/elsewhere:$PYTHONPATH\n")
    proc = look_at_sealed_file(repo, cfg["unseal"], 1, check=False, run_kw={"env": {variable: str(hook)}})
    assert proc.returncode != 0 and f"{variable}=" in proc.stdout + proc.stderr and ("adds code "
                                                                                     "to a process") in \
        proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    _no_look(repo)


def test_the_jobs_of_an_opening_get_an_allowlisted_environment():
    from rerank_study.seal import environment

    env, removed = environment.job_environment({"HOME": "/h", "BASH_ENV": "/x", "LC_ALL": "C",
                                                "MKL_CBWR": "AUTO", "SOME_TOOL": "1",
                                                "PATH": "/evil:/usr/bin", "PYTHONPATH": "w"})
    assert set(env) == {"HOME", "LC_ALL", "MKL_CBWR", "PATH", "PYTHONPATH"} and removed == ["BASH_ENV",
                                                                                            "SOME_TOOL"]
    assert "/evil" not in env["PATH"]


def test_an_invocation_that_chooses_a_jobs_shell_is_refused(tmp_path):
    repo, cfg = _frozen(tmp_path)
    proc = look_at_sealed_file(repo, cfg["unseal"], 1, check=False,
                               args=("--set-resources", "fetch_sealed_qrels:shell_exec=/bin/sh"))
    assert proc.returncode != 0 and "chooses the shell of a job" in proc.stdout + proc.stderr
    _no_look(repo)


def test_a_documentation_file_the_snakefile_includes_is_part_of_the_method(tmp_path):
    def hooks(r):
        (r / "docs").mkdir(exist_ok=True)
        (r / "docs/hooks.md").write_text("# nothing yet\n")
        with open(r / "Snakefile", "a", encoding="utf-8") as fh:
            fh.write('\ninclude: "docs/hooks.md"\n')

    repo = genuine_repo(tmp_path / "w")
    hooks(repo)
    commit_all(repo, "a prepared include")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    (repo / "docs/hooks.md").write_text("import os\n")
    commit_all(repo, "the hook, after freezing")
    with pytest.raises(SealError, match=r"the method changed .*docs/hooks.md \(changed\)"):
        guard.check_unseal(dict(cfg, unseal=sha), repo / "lockfiles", repo)


def test_a_look_is_committed_at_once_so_a_fresh_clone_counts_it(tmp_path):
    repo, cfg = _frozen(tmp_path)
    look_at_sealed_file(repo, cfg["unseal"], 1)
    # nothing left to commit by hand
    assert tree.tree_state(repo, (cfg["results"], cfg["resources"])).dirty == []
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    ccfg = dict(repo_config(clone), unseal=cfg["unseal"])
    assert guard.check_unseal(ccfg, clone / "lockfiles", clone)["opening"] == 2


def test_lookalike_letters_and_punctuation_do_not_make_another_query():
    same = registry.text_sha256
    base = "Anti-TNF therapy decreases life quality."
    for variant in ("Anti-TNF therapy decreases life quality",          # the trailing period dropped
                    "Anti\u2010TNF therapy decreases life quality.",   # another hyphen (U+2010)
                    "Anti-TNF therapy dеcreases life quality.",        # a Cyrillic е in "decreases"
                    "Anti-TNF therapy — decreases life quality!"):     # a dash and another mark
        assert same(variant) == same(base), variant
    assert same(base) != same("Anti-TNF therapy increases life quality.")  # another word is another query
