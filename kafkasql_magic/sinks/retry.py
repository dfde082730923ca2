"""How long a failed persistent query waits before it starts again from its checkpoint: ksqlDB's
retry settings, read from the session's properties."""

#: ksqlDB's settings for retrying a failed persistent query, with its defaults (milliseconds):
#: the query restarts from its checkpoint after a back-off that doubles up to the maximum.
RETRY_INITIAL = ("ksql.query.retry.backoff.initial.ms", 15_000)
RETRY_MAX = ("ksql.query.retry.backoff.max.ms", 900_000)


def retry_backoff(settings: dict) -> tuple[float, float]:
    """(initial, maximum) back-off in seconds from a session's settings."""
    initial, longest = (float(settings.get(name, default)) / 1000 for name, default in (RETRY_INITIAL, RETRY_MAX))
    return initial, longest
