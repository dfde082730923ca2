"""What persistent queries wrote, in a form two runs can be compared by: a table's sink topic
folded to its last value per key (a tombstone removes the key), a stream's as the sorted list of
its records. Keys are compared as their bytes (hex), so a windowed key's window counts too."""

from __future__ import annotations

import json

from kafkasql_magic.kafka.peek import fetch_records


def records(bootstrap: str, topic: str) -> list[dict]:
    """Every record of `topic` in offset order per partition ([] before the topic exists)."""
    try:
        got = fetch_records(bootstrap, topic, from_beginning=True, limit=None, timeout_s=2, until_end=True)
    except Exception:  # noqa: BLE001 - the sink topic is made by the query's first write
        return []
    return sorted(got, key=lambda r: (r["partition"], r["offset"]))


def _value(raw: bytes | None):
    return None if raw is None else json.loads(raw)


def _key(raw: bytes | None) -> str | None:
    return None if raw is None else raw.hex()


def table(bootstrap: str, topic: str) -> dict:
    """key (hex) -> the last value written for it; tombstoned keys left out."""
    last: dict = {}
    for r in records(bootstrap, topic):
        last[_key(r["key"])] = _value(r["value"])
    return {k: v for k, v in last.items() if v is not None}


def stream(bootstrap: str, topic: str) -> list:
    """Every record as [key (hex), value], sorted: the output with its order across partitions left out."""
    return sorted(([_key(r["key"]), _value(r["value"])] for r in records(bootstrap, topic)),
                  key=lambda kv: json.dumps(kv, sort_keys=True))


#: a sink's kind -> how its output is read for comparison
READ = {"table": table, "stream": stream}


def outputs(bootstrap: str, sinks: dict[str, str]) -> dict:
    """{sink topic: its output} for `sinks` ({topic: "table" | "stream"})."""
    return {topic: READ[kind](bootstrap, topic) for topic, kind in sinks.items()}
