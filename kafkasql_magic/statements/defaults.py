"""Session properties with their defaults (SET / UNSET change them per session)."""

from ..dialects.ksql_sources import DEFAULT_KEY_FORMAT

#: ksqlDB properties with their defaults.
DEFAULT_SETTINGS = {
    "auto.offset.reset": "latest",
    DEFAULT_KEY_FORMAT: "KAFKA",
}
