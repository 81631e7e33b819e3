"""The benchmark: episode records, runner, logs, verifier, metrics and reports."""
