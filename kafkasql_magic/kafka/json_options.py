"""Source options whose text is a JSON list (header keys, metadata columns, worker-decoded
members): parsed and checked one way, with one kind of message."""

from __future__ import annotations

import json
from typing import Callable, Mapping

from ..errors import KafkaError


def json_list(options: Mapping[str, str], name: str, valid: Callable[[list], bool], expected: str) -> list | None:
    """Option `name` as a list, None when absent or blank; KafkaError ("Option <name> must be
    <expected>, not <text>") when it is not a JSON list that `valid` accepts."""
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, list) or not valid(value):
        raise KafkaError(f"Option {name} must be {expected}, not {raw!r}")
    return value
