"""What `%kstream schema` shows, as plain Python: topics and their subjects, and per topic the
registered key/value schemas, the ksql columns they imply and the CREATE statement.

`SchemaBrowser(registry_url, bootstrap_servers)`:
- `load()` -> `Listing` (topics of the broker and of the registry's TopicNameStrategy
  subjects; never raises: problems are `Listing.messages`), `Listing.filter(text)`;
- `subjects(filter)` / `topics(filter)`: the same as lists (subjects raise StatementError when
  the registry is down);
- `describe(topic)` -> `TopicSchema`: never raises. A part (key or value) with a registered
  subject is inferred from it (`registry.inference`); a part without one is guessed from a few
  sampled records (`registry.guess`), and a framed part whose schema id the registry knows is
  inferred from that id (pinned with KEY_/VALUE_SCHEMA_ID).
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field

from .. import types
from ..errors import KStreamError, StatementError
from ..registry import inference as inf
from ..registry.guess import Guess

ROLES = ("key", "value")


@dataclass(frozen=True)
class TopicEntry:
    topic: str
    key_subject: str | None = None
    value_subject: str | None = None
    in_broker: bool = True

    @property
    def label(self) -> str:
        parts = [s for s in (self.key_subject, self.value_subject) if s]
        shown = ", ".join(parts) if parts else "no registered schema"
        missing = "" if self.in_broker else " (no such topic)"
        return f"{self.topic}  [{shown}]{missing}"

    def matches(self, text: str) -> bool:
        text = text.strip().lower()
        return not text or any(text in s.lower() for s in (self.topic, self.key_subject or "",
                                                           self.value_subject or ""))


@dataclass(frozen=True)
class Listing:
    entries: tuple[TopicEntry, ...] = ()
    subjects: tuple[str, ...] = ()  # every subject, TopicNameStrategy or not
    messages: tuple[str, ...] = ()

    def filter(self, text: str = "") -> list[TopicEntry]:
        return [e for e in self.entries if e.matches(text)]


@dataclass(frozen=True)
class Part:
    """One side of a topic, for display: where its columns come from."""

    role: str
    format: str | None
    columns: list = field(default_factory=list)
    origin: str = "none"  # "registry", "schema id", "guess", "error" or "none"
    registered: inf.RegisteredVersion | None = None


@dataclass(frozen=True)
class TopicSchema:
    topic: str
    name: str
    key: Part
    value: Part
    source: object | None = None  # an Inferred (with guessed parts filled in) for create_statement
    guess: Guess | None = None
    messages: tuple[str, ...] = ()

    @property
    def is_guess(self) -> bool:
        return "guess" in (self.key.origin, self.value.origin)

    def statement(self, kind: str = "STREAM", explicit: bool = True) -> str:
        """The CREATE statement, or '' when there is not enough to write one (see messages)."""
        if self.source is None or self.value.format is None:
            return ""
        try:
            return inf.create_statement(self.name, self.topic, self.source, kind=kind,
                                        key_format=self.key.format or "KAFKA",
                                        value_format=self.value.format, explicit=explicit)
        except KStreamError as exc:
            return f"-- {exc}"

    def to_text(self) -> str:
        lines = [f"Topic {self.topic}"]
        if self.is_guess:
            lines.append("GUESS: " + (self.guess.summary() if self.guess else "from sampled records"))
        for p in (self.key, self.value):
            lines.append(f"{p.role}: {p.format or '?'} ({_origin_text(p)})")
            lines += [f"  {n} {types.display(t)}" for n, t in p.columns]
        lines += self.messages
        return "\n".join(lines)

    def to_html(self) -> str:
        esc = html.escape
        out = [f"<div><b>Topic</b> <code>{esc(self.topic)}</code></div>"]
        if self.is_guess:
            summary = self.guess.summary() if self.guess else "Guess from sampled records."
            out.append(f"<div style='color:#8a6d3b'><b>GUESS</b> - {esc(summary)} "
                       "Check the columns before you rely on them.</div>")
        for p in (self.key, self.value):
            out.append(f"<div><b>{p.role.capitalize()}</b>: {esc(p.format or '?')} - {esc(_origin_text(p))}</div>")
            if p.columns:
                rows = "".join(f"<tr><td><code>{esc(n)}</code></td><td><code>{esc(types.display(t))}</code></td></tr>"
                               for n, t in p.columns)
                out.append(f"<table><tr><th>column</th><th>type</th></tr>{rows}</table>")
            if p.registered is not None:
                out.append(f"<details><summary>{esc(p.role)} schema text</summary>"
                           f"<pre>{esc(_pretty(p.registered.text))}</pre></details>")
        if self.guess is not None and self.guess.notes:
            out.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in self.guess.notes) + "</ul>")
        out += [f"<div style='color:#a94442'>{esc(m)}</div>" for m in self.messages]
        return "\n".join(out)


def _pretty(text: str) -> str:
    import json

    try:
        return json.dumps(json.loads(text), indent=2)
    except ValueError:
        return text


def _origin_text(p: Part) -> str:
    r = p.registered
    if p.origin in ("registry", "schema id") and r is not None:
        where = f"subject {r.subject} version {r.version}" if r.subject else "no subject"
        how = "latest version" if p.origin == "registry" else "schema id found in the records"
        return f"{r.schema_type} schema id {r.schema_id}, {where} ({how})"
    if p.origin == "guess":
        return "guessed from sampled records"
    if p.origin == "error" and r is not None:
        return f"{r.schema_type} schema id {r.schema_id}, subject {r.subject}: no columns inferred (see below)"
    return "no columns"


class SchemaBrowser:
    """Registry subjects and topics, and what each topic's schemas imply (pure, blocking calls)."""

    def __init__(self, registry_url: str | None, bootstrap_servers: str | None, *,
                 sample_size: int = 20, sample_timeout: float = 3.0, conf: dict | None = None):
        self.registry_url = registry_url.rstrip("/") if registry_url else None
        self.bootstrap_servers = bootstrap_servers
        self.sample_size = sample_size
        self.sample_timeout = sample_timeout
        self.conf = conf

    # -- listing ----------------------------------------------------------------------------
    def subjects(self, filter: str = "") -> list[str]:
        if not self.registry_url:
            raise StatementError("No schema registry URL: connect(..., schema_registry_url=...)")
        text = filter.strip().lower()
        return [s for s in inf.subjects(self.registry_url) if text in s.lower()]

    def topics(self, filter: str = "") -> list[TopicEntry]:
        return self.load().filter(filter)

    def load(self) -> Listing:
        messages: list[str] = []
        subjects: list[str] = []
        broker_topics: list[str] = []
        if self.registry_url:
            try:
                subjects = inf.subjects(self.registry_url)
            except KStreamError as exc:
                messages.append(str(exc))
        else:
            messages.append("No schema registry URL: only guesses from sampled records are possible.")
        if self.bootstrap_servers:
            from ..kafka import admin

            try:
                broker_topics = [t.name for t in admin.list_topics(
                    self.bootstrap_servers, conf=self.conf, timeout=5.0) if not t.name.startswith("_")]
            except KStreamError as exc:
                messages.append(str(exc))
        by_topic: dict[str, dict] = {t: {} for t in broker_topics}
        for s in subjects:
            for role in ROLES:
                if s.endswith(f"-{role}"):
                    by_topic.setdefault(s[: -len(role) - 1], {})[f"{role}_subject"] = s
        entries = tuple(TopicEntry(t, in_broker=t in broker_topics or not self.bootstrap_servers, **by_topic[t])
                        for t in sorted(by_topic))
        return Listing(entries, tuple(subjects), tuple(messages))

    # -- one topic ----------------------------------------------------------------------------
    def sample(self, topic: str) -> list[dict]:
        from ..kafka.peek import fetch_records

        return fetch_records(self.bootstrap_servers, topic, from_beginning=True, limit=self.sample_size,
                             timeout_s=self.sample_timeout, conf=self.conf)

    def describe(self, topic: str, name: str | None = None) -> TopicSchema:
        messages: list[str] = []
        registered: dict[str, inf.RegisteredVersion | None] = {"key": None, "value": None}
        registry_ok = bool(self.registry_url)
        if not self.registry_url:
            messages.append("No schema registry URL: the columns below are guessed from sampled records.")
        for role in ROLES if registry_ok else ():
            try:
                registered[role] = inf.fetch_latest(self.registry_url, topic, role)
            except StatementError as exc:
                if "does not exist" not in str(exc):
                    messages.append(str(exc))
                    registry_ok = False
                    break
        g = None
        if any(r is None for r in registered.values()):
            g = self._guess(topic, messages)
        origins = {role: "registry" if registered[role] else "none" for role in ROLES}
        if g is not None and registry_ok:
            for role in ROLES:  # framed records: ask the registry for the ids they carry
                ids = getattr(g, f"{role}_schema_ids")
                if registered[role] is None and ids:
                    try:
                        registered[role] = inf.fetch_by_id(self.registry_url, topic, role, ids[-1])
                        origins[role] = "schema id"
                    except StatementError as exc:
                        messages.append(str(exc))
        formats = {role: inf.FORMATS.get(registered[role].schema_type, registered[role].schema_type)
                   if registered[role] else (getattr(g, f"{role}_format") if g else None) for role in ROLES}
        if formats["key"] is None:
            formats["key"] = "KAFKA"
        inferred = {}
        for role in ROLES:
            reg = registered[role]
            if reg is None:
                continue
            try:
                inferred[role] = inf.infer_from(
                    topic, key_format=formats["key"], value_format=formats["value"] or "KAFKA",
                    **{role: reg, f"{role}_pinned": origins[role] == "schema id"})
            except KStreamError as exc:
                messages.append(str(exc))
                origins[role] = "error"
        source = self._combine(topic, formats, inferred, g, origins)
        if formats["value"] is None:
            messages.append(f"No registered schema for subject {inf.subject(topic, 'value')} and no records "
                            "to sample: nothing to infer the value columns from.")
        parts = {role: Part(role, formats[role], list(getattr(source, f"{role}_columns")), origins[role],
                            registered[role]) for role in ROLES}
        return TopicSchema(topic, name or inf.source_name(topic), parts["key"], parts["value"],
                           source, g, tuple(messages))

    def _guess(self, topic: str, messages: list[str]) -> Guess | None:
        if not self.bootstrap_servers:
            return None
        try:
            records = self.sample(topic)
        except KStreamError as exc:
            messages.append(str(exc))
            return None
        return inf.guess(records)

    @staticmethod
    def _combine(topic, formats, inferred, g, origins) -> inf.Inferred:
        """One Inferred: registry parts as inferred, the other parts filled from the guess."""
        out = inf.Inferred(topic=topic, key_format=formats["key"], value_format=formats["value"] or "KAFKA")
        for role in ROLES:
            if origins[role] == "error":
                continue
            if role in inferred:
                keep = [f.name for f in dataclasses.fields(inf.Inferred) if f.name.startswith(role)]
                out = dataclasses.replace(out, **{k: getattr(inferred[role], k) for k in keep})
            elif g is not None:
                origins[role] = "guess" if getattr(g, f"{role}_format") else "none"
                changes = {f"{role}_columns": list(getattr(g, f"{role}_columns"))}
                if role == "value":
                    changes["value_wrapped"] = g.value_wrapped
                out = dataclasses.replace(out, **changes)
        return out
