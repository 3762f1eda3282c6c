"""The layout table: the paths of a run folder, what a manifest lists for each kind of reranker, and the
role of a key. Expected lists are written out here from the table's documented rules."""

import pytest

from rerank_study.core import layout
from rerank_study.core.names import CROSS_ENCODER, RUN_FILE


def test_run_paths_put_every_artefact_and_run_file_under_the_run_folder():
    paths = layout.run_paths("results/s/dev")
    assert paths["summary"] == "results/s/dev/summary.json"
    assert paths["forest_plot"] == "results/s/dev/figures/forest.png"
    assert paths["manifest"] == "results/s/dev/manifest.json"
    assert paths["opening"] == "results/s/dev/OPENING.json"
    assert len(paths) == len(layout.RUN_ARTEFACTS) + len(layout.RUN_FILES)  # no key shared, none lost
    assert len(set(paths.values())) == len(paths)                            # no two keys share a file


def test_the_table_has_unique_keys_and_paths():
    keys = [a.key for a in layout.RUN_ARTEFACTS]
    assert len(keys) == len(set(keys))
    assert not set(keys) & set(layout.RUN_FILES)
    assert not set(keys) & ({k for k, _ in layout.INPUTS} | set(layout.QRELS_KEYS))
    assert layout.CROSS_ENCODER_ONLY <= set(keys) and layout.RUN_FILE_ONLY <= set(keys)
    assert not layout.CROSS_ENCODER_ONLY & layout.RUN_FILE_ONLY


def test_non_deterministic_are_the_sidecars_reports_and_measurements():
    assert layout.NON_DETERMINISTIC == {"meta_rrf", "meta_ce", "meta_blend", "report", "report_html",
                                        "scoring_measurements", "verification_measurements",
                                        "report_measurements"}


def test_run_artefacts_leave_out_what_the_other_kind_of_reranker_makes():
    ce = [a.key for a in layout.run_artefacts(CROSS_ENCODER)]
    run = [a.key for a in layout.run_artefacts(RUN_FILE)]
    assert ce == [a.key for a in layout.run_artefacts()]  # a cross-encoder is the default
    assert {"pairs", "shape_check", "verification"} <= set(ce) and "reranker_scores" not in ce
    assert {"reranker_scores", "reranker_run"} <= set(run) and "pairs" not in run
    # both keep everything else, in table order
    common = [a.key for a in layout.RUN_ARTEFACTS
              if a.key not in layout.CROSS_ENCODER_ONLY | layout.RUN_FILE_ONLY]
    assert [k for k in ce if k in common] == common == [k for k in run if k in common]
    assert len(ce) == len(layout.RUN_ARTEFACTS) - 2 and len(run) == len(layout.RUN_ARTEFACTS) - 5


def test_an_unknown_reranker_kind_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown reranker kind 'bi-encoder'; known: \('cross-encoder', "):
        layout.run_artefacts("bi-encoder")
    with pytest.raises(ValueError, match="unknown reranker kind"):
        layout.manifest_keys("qrels_dev", "bi-encoder")


def test_manifest_keys_list_the_inputs_then_the_qrels_then_the_artefacts():
    keys = layout.manifest_keys("qrels_confirm")
    assert keys[:6] == ["corpus", "queries", "split_dev", "split_confirm", "candidates", "qrels_confirm"]
    assert keys[6:] == [a.key for a in layout.run_artefacts(CROSS_ENCODER)]
    assert "qrels_dev" not in keys
    assert layout.manifest_keys("qrels_dev", RUN_FILE)[5:7] == ["qrels_dev", "run_queries"]


@pytest.mark.parametrize("key, expected", [
    ("corpus", ("corpus", "input")),
    ("split_confirm", ("split_confirm", "input")),
    ("qrels_dev", ("qrels_dev", "input")),
    ("qrels_confirm", ("qrels_confirm", "input")),
    ("run_qrels", ("qrels_run", "run")),
    ("groups_meta", ("groups", "run")),
    ("meta_ce", ("run_metadata", "run")),
    ("reranker_run", ("reranker_run", "run")),
])
def test_role_of_a_key(key, expected):
    assert layout.role_of(key) == expected


def test_role_of_an_unknown_key_or_a_run_file_is_a_key_error():
    with pytest.raises(KeyError, match="unknown artefact key 'nope'"):
        layout.role_of("nope")
    with pytest.raises(KeyError, match="'manifest'"):  # the manifest does not list itself
        layout.role_of("manifest")
