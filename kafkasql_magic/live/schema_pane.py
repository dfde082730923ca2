"""The ipywidgets face of a SchemaBrowser: `%kstream schema`.

A filter box over the topics (and their TopicNameStrategy subjects); selecting one shows its key
and value schemas, the ksql columns they imply (or a clearly marked guess from sampled records)
and the CREATE STREAM / CREATE TABLE statement, in a Textarea to copy or edit, with a button
handing it to `on_insert(text)` (the magic makes that a new cell). Registry and broker calls run
in a background thread by default and only set widget values there, as `live/view.py` does.
"""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path
from typing import Callable

import ipywidgets as widgets

from .schema_model import Listing, SchemaBrowser, TopicSchema

LOADING = "<i>Loading...</i>"
_CELL_ACTIONS = re.sub(r"^\s*//.*$|\n\s*", "", (Path(__file__).parent / "cell_actions.js").read_text(), flags=re.M)


def actions_html(enabled: bool) -> str:
    """Insert-into-a-new-cell and Copy buttons that act in the page (a kernel cannot add cells)."""
    disabled = "" if enabled else " disabled"
    buttons = []
    for action, label, tip in (("insert", "Insert into a new cell", "a %%kstream cell below, with this statement"),
                               ("copy", "Copy", "the statement to the clipboard")):
        script = html.escape(_CELL_ACTIONS.replace("ACTION", repr(action)), quote=True)
        buttons.append(f'<button class="jupyter-widgets jupyter-button widget-button kstream-{action}" '
                       f'style="width:auto" title="{html.escape(tip)}" onclick="{script}"{disabled}>{label}</button>')
    return '<div style="display:flex;gap:6px">' + "".join(buttons) + "</div>"


class SchemaPane:
    """Widgets: `filter`, `refresh`, `topics` (Select), `status`, `kind`, `explicit`, `details`,
    `statement` (Textarea), `insert` (Button); `widget` is the whole pane.

    `background=False` runs every look-up in the calling thread (deterministic tests)."""

    def __init__(self, browser: SchemaBrowser, on_insert: Callable[[str], object] | None = None, *,
                 background: bool = True):
        self.browser = browser
        self.on_insert = on_insert
        self.background = background
        self.listing = Listing()
        self.current: TopicSchema | None = None
        self._lock = threading.Lock()
        self._token = 0
        self._updating = False
        self._listing_lock = threading.RLock()
        self._threads: list[threading.Thread] = []
        full = widgets.Layout(width="100%")
        self.filter = widgets.Text(placeholder="filter topics and subjects", description="Filter",
                                   continuous_update=True)
        self.refresh = widgets.Button(description="Refresh", icon="refresh", tooltip="Reload topics and subjects",
                                      layout=widgets.Layout(width="auto"))
        self.topics = widgets.Select(options=[], rows=12, layout=widgets.Layout(width="36%"))
        self.status = widgets.HTML()
        self.kind = widgets.ToggleButtons(options=["STREAM", "TABLE"], value="STREAM")
        self.explicit = widgets.ToggleButtons(
            options=[("explicit columns", True), ("ksqlDB inference", False)], value=True,
            tooltips=["every column listed (runs as is)",
                      "columns of registry-backed parts left to schema inference, as in ksqlDB"])
        self.details = widgets.HTML("<i>Select a topic.</i>")
        self.statement = widgets.Textarea(rows=10, layout=full,
                                          placeholder="The CREATE statement of the selected topic")
        self.insert = widgets.Button(description="Insert into a new cell", icon="plus",
                                     disabled=True, layout=widgets.Layout(width="auto"))
        self.actions = widgets.HTML(actions_html(False))
        self.filter.observe(self._filtered, names="value")
        self.refresh.on_click(lambda _: self.reload())
        self.topics.observe(self._selected, names="value")
        self.kind.observe(self._options_changed, names="value")
        self.explicit.observe(self._options_changed, names="value")
        self.insert.on_click(self._insert_clicked)
        act = self.insert if on_insert is not None else self.actions  # a callback, or the page's own buttons
        right = widgets.VBox([widgets.HBox([self.kind, self.explicit]), self.details, self.statement, act],
                             layout=widgets.Layout(width="64%"))
        self.widget = widgets.VBox([widgets.HBox([self.filter, self.refresh]), self.status,
                                    widgets.HBox([self.topics, right])])
        self.widget.add_class("kstream-schema-pane")
        self.reload()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- running look-ups ---------------------------------------------------------------------
    def _run(self, fn, *args) -> None:
        if not self.background:
            fn(*args)
            return
        t = threading.Thread(target=fn, args=args, daemon=True, name="kafkasql-schema-pane")
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait for background look-ups (tests); True when none is left running."""
        for t in list(self._threads):
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    # -- listing ------------------------------------------------------------------------------
    def reload(self) -> None:
        self.status.value = LOADING
        self._run(self._load)

    def _load(self) -> None:
        try:
            listing = self.browser.load()
        except Exception as exc:  # noqa: BLE001 - never let a thread die silently
            listing = Listing(messages=(f"Cannot list topics: {exc}",))
        self.listing = listing
        self._show_listing()

    def _show_listing(self) -> None:
        with self._listing_lock:
            self._render_listing()

    def _render_listing(self) -> None:
        entries = self.listing.filter(self.filter.value)
        keep = self.topics.value
        self._updating = True
        try:  # a filter that hides the selection clears it rather than selecting another topic
            self.topics.options = [(e.label, e.topic) for e in entries]
            if keep not in {e.topic for e in entries}:
                self.topics.index = None
        finally:
            self._updating = False
        counts = (f"{len(entries)} of {len(self.listing.entries)} topic(s), "
                  f"{len(self.listing.subjects)} subject(s)")
        msgs = "".join(f"<div style='color:#a94442'>{html.escape(m)}</div>" for m in self.listing.messages)
        self.status.value = f"<span>{counts}</span>{msgs}"

    def _filtered(self, change) -> None:
        self._show_listing()

    def select(self, topic: str) -> None:
        """Select `topic` (clearing the filter when it hides it)."""
        if topic not in {v for _, v in self.topics.options}:
            self.filter.value = ""
        if topic not in {v for _, v in self.topics.options}:
            raise KeyError(f"topic {topic!r} is not listed")
        if self.topics.value == topic:
            self._selected({"new": topic})
        else:
            self.topics.value = topic

    # -- one topic ----------------------------------------------------------------------------
    def _selected(self, change) -> None:
        topic = change["new"]
        if topic is None or self._updating:
            return
        with self._lock:
            self._token += 1
            token = self._token
        self.details.value = LOADING
        self.insert.disabled = True
        self.actions.value = actions_html(False)
        self._run(self._describe, topic, token)

    def _describe(self, topic: str, token: int) -> None:
        try:
            described = self.browser.describe(topic)
        except Exception as exc:  # noqa: BLE001
            with self._lock:
                if token == self._token:
                    self.details.value = f"<div style='color:#a94442'>{html.escape(str(exc))}</div>"
            return
        with self._lock:
            if token != self._token:
                return  # another topic was selected meanwhile
            self.current = described
        self._show()

    def _options_changed(self, change) -> None:
        if self.current is not None:
            self._show()

    def _show(self) -> None:
        current = self.current
        self.details.value = current.to_html()
        text = current.statement(self.kind.value, explicit=self.explicit.value)
        self.statement.value = text
        self.insert.disabled = self.on_insert is None or not text or text.startswith("--")
        self.actions.value = actions_html(bool(text) and not text.startswith("--"))

    def _insert_clicked(self, _button) -> None:
        text = self.statement.value
        if self.on_insert is not None and text.strip():
            self.on_insert(text)
