"""Rankings before the reranker: the tie rule and fusion, TREC run files, first-stage
retrieval (BM25, dense) and the frozen candidate table."""

__all__ = ['candidates', 'ranking', 'retrieval', 'trec']
