"""The experiment's data, pinned: acquisition of a BEIR-layout dataset, the public catalogue,
the BEIR readers, every pin file, and the development / confirmation query splits."""

__all__ = ['acquire', 'beir', 'catalogue', 'pins', 'splits']
