"""What a run folder holds, read with the audit's own readers: the file formats, the YAML subset of the
config files, the documented layout, every declared column and key, and the run's files read once each."""

__all__ = ['columns', 'layout', 'readers', 'run_files', 'yamlsubset']
