"""SET 'processing.guarantee': at-least-once is what persistent queries keep; exactly-once is refused."""

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.statements.properties import check_guarantee


def test_at_least_once_is_accepted():
    check_guarantee("at_least_once")


@pytest.mark.parametrize("value", ["exactly_once_v2", "exactly_once"])
def test_exactly_once_is_refused_saying_what_was_measured(value):
    with pytest.raises(StatementError, match=rf"processing.guarantee '{value}' is not supported\. .*at-least-once"
                                             r".*read_committed consumers still see aborted records"):
        check_guarantee(value)


def test_unknown_guarantee_lists_the_values():
    with pytest.raises(StatementError) as info:
        check_guarantee("twice")
    assert str(info.value) == ("Invalid value twice for configuration processing.guarantee: String must be one of: "
                               "at_least_once, exactly_once, exactly_once_beta, exactly_once_v2")


def test_retry_back_off_comes_from_ksqldb_settings_in_milliseconds():
    from kafkasql_magic.sinks.retry import retry_backoff

    assert retry_backoff({}) == (15.0, 900.0)  # ksqlDB's defaults
    assert retry_backoff({"ksql.query.retry.backoff.initial.ms": "500",
                          "ksql.query.retry.backoff.max.ms": "2000"}) == (0.5, 2.0)
