"""What an invocation asks for, checked before any job: the config and its generated README,
the studies, and the parse-time checks of a study's inputs and reranker."""

__all__ = ['config', 'config_docs', 'guards', 'reranker_checks', 'studies']
