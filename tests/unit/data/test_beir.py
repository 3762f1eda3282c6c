"""BEIR readers: the fixture read as BEIR's own GenericDataLoader reads it; malformed lines named by file and
line; query metadata discarded."""

import pytest
from conftest import FIXTURE

from rerank_study.core.errors import MalformedInputError
from rerank_study.data import beir


def test_fixture_reads_and_doc_text_convention():
    corpus = beir.read_corpus(FIXTURE / "corpus.jsonl")
    queries = beir.read_queries(FIXTURE / "queries.jsonl")
    qrels = beir.read_qrels(FIXTURE / "qrels/train.tsv")
    assert len(corpus) == 163 and len(queries) == 18 and len(qrels) == 12
    d = corpus["31715818"]
    assert d.full_text == (d.title + " " + d.text).strip()
    assert qrels["35"] == {"5152028": 1, "11705328": 1}


def test_reader_matches_beir_generic_data_loader(tmp_path):
    """Upstream comparison: BEIR's own loader reads the same corpus, queries and qrels."""
    from beir.datasets.data_loader import GenericDataLoader

    corpus, queries, qrels = GenericDataLoader(data_folder=str(FIXTURE)).load(split="train")
    ours = beir.read_corpus(FIXTURE / "corpus.jsonl")
    assert {k: (v["title"], v["text"]) for k, v in corpus.items()} == {k: (d.title, d.text)
                                                                       for k, d in ours.items()}
    assert qrels == beir.read_qrels(FIXTURE / "qrels/train.tsv")
    our_q = beir.read_queries(FIXTURE / "queries.jsonl")
    assert queries == {q: our_q[q] for q in qrels}


@pytest.mark.parametrize("content,match", [
    ('{"_id": "1", "title": "t", "text": "x"}\n{"_id": "2", "title": "t"', "line 2: last line is "
     "not terminated"),
    ('{"_id": "1", "title": "t", "text": "x"}\n{"_id": 2, "title": "t", "text": "x"}\n', "line 2: key '_id' "
     "must be a string"),
    ('{"_id": "1", "title": "t", "text": "x"}\nnot json\n', "line 2: invalid JSON"),
    ('{"_id": "1", "title": "t", "text": "x"}\n{"_id": "1", "title": "t", "text": "y"}\n',
     "line 2: duplicate document id"),
])
def test_malformed_corpus_lines_name_file_and_line(tmp_path, content, match):
    p = tmp_path / "corpus.jsonl"
    p.write_text(content)
    with pytest.raises(MalformedInputError, match=match) as exc:
        beir.read_corpus(p)
    assert str(p) in str(exc.value)


def test_malformed_qrels(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_bytes(b"query-id\tcorpus-id\tscore\r\n1\t2\tone\r\n")
    with pytest.raises(MalformedInputError, match="line 2: score 'one' is not an integer"):
        beir.read_qrels(p)
    p.write_bytes(b"qid\tdoc\tscore\r\n")
    with pytest.raises(MalformedInputError, match="line 1: header"):
        beir.read_qrels(p)


def test_queries_metadata_is_discarded():
    # SciFact query metadata carries evidence doc ids (for sealed claims too); the reader drops it
    queries = beir.read_queries(FIXTURE / "queries.jsonl")
    assert all(isinstance(v, str) for v in queries.values())
