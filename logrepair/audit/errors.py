"""Errors the audit reports as one line (exit 2), importable without pyarrow or pyspark."""


class SummaryError(ValueError):
    """A destination or source of scan summaries that cannot be used."""
