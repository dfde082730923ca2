"""GRACE PERIOD, RETENTION and EMIT FINAL: parsing, ksqlDB's defaults and messages, the plan."""

from __future__ import annotations

import pytest

from kafkasql_magic.engine.window.timing import DEFAULT_GRACE_MS, WindowTiming, timing_of
from kafkasql_magic.errors import SqlSyntaxError, StatementError
from kafkasql_magic.sql import ast, parse_statement

from test_analysis import plan_of

MINUTE, DAY = 60_000, 86_400_000


def window_of(text: str) -> ast.Window:
    return parse_statement(f"SELECT item, COUNT(*) FROM orders {text} GROUP BY item EMIT CHANGES;").window


def test_window_options_parse_to_milliseconds():
    assert window_of("WINDOW TUMBLING (SIZE 1 MINUTE, RETENTION 2 DAYS, GRACE PERIOD 10 MINUTES)") == ast.Window(
        "TUMBLING", MINUTE, None, 2 * DAY, 10 * MINUTE)
    hopping = window_of("WINDOW HOPPING (SIZE 5 MINUTES, ADVANCE BY 1 MINUTE, GRACE PERIOD 0 SECONDS)")
    assert (hopping.size, hopping.advance, hopping.retention, hopping.grace) == (5 * MINUTE, MINUTE, None, 0)
    assert window_of("WINDOW SESSION (30 SECONDS, RETENTION 1 DAY)").retention == DAY
    assert window_of("WINDOW TUMBLING (SIZE 1 SECOND)").grace is None


def test_retention_comes_before_grace_as_in_ksqldb():
    with pytest.raises(SqlSyntaxError):
        window_of("WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 1 MINUTE, RETENTION 2 DAYS)")


def test_emit_final_is_a_push_query():
    stmt = parse_statement("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY item "
                           "EMIT FINAL LIMIT 2;")
    assert (stmt.emit_changes, stmt.emit_final, stmt.limit) == (True, True, 2)
    assert parse_statement("SELECT * FROM orders EMIT CHANGES;").emit_final is False


def test_the_new_keywords_stay_usable_as_column_names():
    stmt = parse_statement("SELECT grace, period, retention, final FROM s;")
    assert [i.expr.name for i in stmt.items] == ["GRACE", "PERIOD", "RETENTION", "FINAL"]


def test_ksqldb_defaults_24_hours_grace_and_retention_size_plus_grace():
    assert timing_of(ast.Window("TUMBLING", MINUTE)) == WindowTiming(MINUTE, MINUTE, DEFAULT_GRACE_MS,
                                                                     MINUTE + DEFAULT_GRACE_MS)
    assert DEFAULT_GRACE_MS == DAY
    assert timing_of(ast.Window("HOPPING", 5 * MINUTE, MINUTE, 3 * DAY, 0)) == WindowTiming(
        5 * MINUTE, MINUTE, 0, 3 * DAY)


@pytest.mark.parametrize("text,message", [
    ("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT FINAL;",
     "EMIT FINAL is only supported for windowed aggregations."),
    ("SELECT * FROM orders EMIT FINAL;", "EMIT FINAL is only supported for windowed aggregations."),
    ("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE, RETENTION 1 HOUR) GROUP BY item "
     "EMIT CHANGES;",  # the default grace (24 hours) counts
     "The retention period of the window store Aggregate-Aggregate-Materialize must be no smaller than its "
     "window size plus the grace period. Got size=[60000], grace=[86400000], retention=[3600000]"),
    ("SELECT item, COUNT(*) FROM orders WINDOW HOPPING (SIZE 10 MINUTES, ADVANCE BY 1 MINUTE, RETENTION 10 MINUTES, "
     "GRACE PERIOD 1 SECOND) GROUP BY item EMIT CHANGES;",
     "Got size=[600000], grace=[1000], retention=[600000]"),
])
def test_ksqldb_messages(text, message):
    with pytest.raises(StatementError) as error:
        plan_of(text)
    assert message in str(error.value)


@pytest.mark.parametrize("text,message", [
    ("SELECT o.item, COUNT(*) FROM orders o JOIN clicks c WITHIN 1 MINUTE GRACE PERIOD 1 SECOND ON o.id = c.id "
     "WINDOW SESSION (30 SECONDS) GROUP BY o.item EMIT CHANGES;",
     "SESSION windows after a stream-stream join are not supported yet by kafkasql_magic"),
])
def test_session_windows_refused_where_they_do_not_run(text, message):
    with pytest.raises(StatementError) as error:
        plan_of(text)
    assert message in str(error.value)


def test_retention_equal_to_size_plus_grace_is_accepted():
    plan = plan_of("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE, RETENTION 2 MINUTES, "
                   "GRACE PERIOD 1 MINUTE) GROUP BY item EMIT CHANGES;")
    assert plan.tracks_time and not plan.per_batch  # keyed state (engine/window)
    plan_of("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE, RETENTION 2 DAYS) GROUP BY item "
            "EMIT CHANGES;")  # size + the default grace (24 hours) fits


@pytest.mark.parametrize("text,tracks", [
    ("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 0 SECONDS) GROUP BY item "
     "EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY item EMIT CHANGES;",
     True),  # ksqlDB's default grace (24 hours) applies
    ("SELECT item, COUNT(*) FROM orders WINDOW HOPPING (SIZE 2 MINUTES, ADVANCE BY 1 MINUTE) GROUP BY item "
     "EMIT FINAL;", True),
    ("SELECT o.item, COUNT(*) FROM orders o JOIN items i ON o.item = i.item "
     "WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 1 SECOND) GROUP BY o.item EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;", False),
    ("SELECT item, COUNT(*) FROM orders WINDOW SESSION (30 SECONDS) GROUP BY item EMIT CHANGES;", True),
])
def test_push_windowed_aggregations_track_stream_time(text, tracks):
    plan = plan_of(text)
    assert plan.tracks_time is tracks
    if tracks:  # every window in keyed state, SESSION windows too
        assert not plan.per_batch and plan.capture == "metrics"


def test_emit_final_over_session_windows_is_planned_as_ksqldb_does():
    plan = plan_of("SELECT item, COUNT(*) FROM orders WINDOW SESSION (5 MILLISECONDS, GRACE PERIOD 6 MILLISECONDS) "
                   "GROUP BY item EMIT FINAL;")
    assert plan.tracks_time and plan.statement.emit_final and not plan.per_batch


def test_within_takes_a_grace_period():
    join = parse_statement("SELECT * FROM a LEFT JOIN b WITHIN 1 HOUR GRACE PERIOD 10 MINUTES ON a.id = b.id "
                           "EMIT CHANGES;").joins[0]
    assert (join.kind, join.within, join.grace) == ("LEFT", (3_600_000, 3_600_000), 10 * MINUTE)
    join = parse_statement("SELECT * FROM a FULL OUTER JOIN b x WITHIN (1 SECOND, 2 SECONDS) GRACE PERIOD 0 SECONDS "
                           "ON a.id = x.id EMIT CHANGES;").joins[0]
    assert (join.kind, join.source.alias, join.within, join.grace) == ("FULL", "X", (1000, 2000), 0)
    assert parse_statement("SELECT * FROM a JOIN b WITHIN 1 HOUR ON a.id = b.id;").joins[0].grace is None


@pytest.mark.parametrize("kind", ["LEFT", "RIGHT", "FULL OUTER"])
def test_stream_stream_outer_joins_are_planned(kind):
    plan = plan_of(f"SELECT o.id, c.url FROM orders o {kind} JOIN clicks c WITHIN 1 MINUTE GRACE PERIOD 1 SECOND "
                   f"ON o.id = c.id EMIT CHANGES;")
    assert plan.kind == "STREAM" and not plan.per_batch and plan.output_mode == "append"


@pytest.mark.parametrize("text,message", [
    ("SELECT o.id FROM orders o LEFT JOIN clicks c ON o.id = c.id EMIT CHANGES;",
     "Stream-Stream joins must have a WITHIN clause specified. None was provided."),
    ("SELECT o.id FROM orders o LEFT JOIN items i WITHIN 1 HOUR GRACE PERIOD 1 MINUTE ON o.item = i.item "
     "EMIT CHANGES;",  # GRACE PERIOD belongs to WITHIN: neither applies to a stream-table join
     "A window definition was provided for a Stream-Table join. These joins are not windowed."),
    ("SELECT i.item FROM items i RIGHT JOIN orders o ON o.item = i.item EMIT CHANGES;",
     "Invalid join order: table-stream joins are not supported; only stream-table joins. "
     "Got ITEMS RIGHT JOIN ORDERS."),
])
def test_join_messages_in_ksqldb_words(text, message):
    with pytest.raises(StatementError) as error:
        plan_of(text)
    assert message in str(error.value)
