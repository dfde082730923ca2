"""The persistent-query card: rates from running totals, Terminate, ended state."""

from kafkasql_magic.live.query_card import QueryCard, QueryCardModel


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def test_rates_from_totals_fall_to_zero_and_vanish_when_terminated():
    clock = Clock()
    model = QueryCardModel("CSAS_OUT_1", sink_topic="out", clock=clock)
    clock.now += 2
    state = model.update(records_in=20, records_out=10, lag=5, errors=1)
    assert (state.in_per_second, state.out_per_second, state.lag, state.errors) == (10.0, 5.0, 5, 1)
    clock.now += 6
    assert model.update(records_in=20, records_out=10).in_per_second == 0  # idle
    ended = model.update(status="TERMINATED")
    assert ended.in_per_second is None and ended.out_per_second is None


def test_card_shows_the_fields_and_terminate_calls_back_once_ended_it_is_disabled():
    calls = []
    model = QueryCardModel("CSAS_OUT_1", sink_topic="out")
    card = QueryCard(model, on_terminate=lambda: calls.append(1))
    model.update(records_in=3, records_out=2, lag=0, errors=4)
    for text in ("CSAS_OUT_1", "RUNNING", "records in: <b>3</b>", "processing log: <b>4</b>", ">out</b>"):
        assert text in card.info.value
    card.terminate.click()
    assert calls == [1]
    model.update(status="TERMINATED")
    assert card.terminate.disabled and "TERMINATED" in card.info.value


def test_a_long_sink_name_ends_in_an_ellipsis_on_one_line_with_the_whole_name_on_hover():
    import re

    name = "enriched_orders_by_customer_region_and_day_" * 3
    html = QueryCard(QueryCardModel("CSAS_X_1", sink_topic=name), on_terminate=lambda: None).info.value
    sink = re.search(r'<span class="kstream-sink" style="([^"]*)">sink:&nbsp;<b title="([^"]*)" style="([^"]*)">'
                     r"([^<]*)</b></span>", html)
    assert sink, html
    assert "white-space:nowrap" in sink.group(1)  # `sink:` and its name never part
    assert sink.group(2) == sink.group(4) == name  # the whole name, shown cut and on hover
    assert all(rule in sink.group(3) for rule in ("text-overflow:ellipsis", "overflow:hidden", "max-width:24em"))


def test_follow_polls_the_status_object_until_the_query_ends():
    from types import SimpleNamespace

    from kafkasql_magic.live.query_card import follow

    def status(state, out, message=None):
        return SimpleNamespace(status=state, records_in=out * 2, records_out=out, lag=0, errors=1, message=message)

    polls = iter([status("RUNNING", 5), status("RUNNING", 9), status("ERROR", 9, "broker gone")])
    model = QueryCardModel("CSAS_OUT_1", sink_topic="out")
    seen = []
    model.subscribe(seen.append)
    follow(model, lambda: next(polls), interval=0.01).join(timeout=5)
    assert [s.records_out for s in seen] == [5, 9, 9]
    assert model.state.status == "ERROR" and model.state.message == "broker gone"
    assert model.state.records_in == 18 and model.state.out_per_second is None
    card = QueryCard(model, on_terminate=lambda: None)
    assert card.terminate.disabled and "broker gone" in card.info.value
