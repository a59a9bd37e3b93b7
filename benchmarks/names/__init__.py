"""Company names as people type them: ``python -m benchmarks.names``."""
