"""The registry's state: schemas by global id, subjects and their versions, compatibility
config, and the log records that build it.

Every change is first written to the log (`SchemaLog`, a compacted Kafka topic) and then
applied to memory by the same `_apply` that replays the log at start, so a restarted registry
rebuilds exactly what it served. The operations on this state are in `store.py`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Callable

from kafkasql_magic.registry import schemas

DEFAULT_LEVEL = "BACKWARD"
LOG = logging.getLogger("kafkasql_magic.registry")


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(what: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, what)


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def parse_version(text) -> int | None:
    """A version path segment: None for `latest` (or -1), else a positive int (42202)."""
    if str(text).lower() == "latest":
        return None
    try:
        v = int(str(text))
    except ValueError:
        v = 0
    if v == -1:
        return None
    if not 1 <= v <= 2**31 - 1:
        raise RegistryError(422, 42202, f"The specified version '{text}' is not a valid version "
                            f"id. Allowed values are between [1, 2^31-1] and the string \"latest\"")
    return v


@dataclass
class SchemaEntry:
    id: int
    schema_type: str
    text: str
    references: list  # [{"name", "subject", "version"}]
    extra: dict  # "metadata" and "ruleSet", stored and served as given
    parsed: schemas.Parsed | None = field(default=None, repr=False)

    def body(self) -> dict:
        out = {"schema": self.text}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = self.references
        out.update(self.extra)
        return out


@dataclass
class Version:
    subject: str
    version: int
    id: int
    deleted: bool = False


def schema_key(subject: str, version: int) -> dict:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def config_key(subject: str | None) -> dict:
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


class State:
    """Registry state; `append(key, value)` persists a change before it is applied."""

    def __init__(self, append: Callable[[dict, dict | None], None] | None = None):
        self._append = append or (lambda key, value: None)
        self.lock = threading.RLock()
        self._by_id: dict[int, SchemaEntry] = {}
        self._id_of: dict[tuple, int] = {}  # identity -> global id
        self._subjects: dict[str, dict[int, Version]] = {}
        self._config: dict[str | None, str] = {}
        self._next_id = 1

    # ------------------------------------------------------------------ log records
    def load(self, records) -> None:
        with self.lock:
            for key, value in records:
                try:
                    self._apply(key, value)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    LOG.warning("Skipping a malformed schema registry record %r: %s", key, exc)

    def _write(self, key: dict, value: dict | None) -> None:
        self._append(key, value)
        self._apply(key, value)

    def _apply(self, key: dict, value: dict | None) -> None:
        kind = key.get("keytype") if isinstance(key, dict) else None
        if kind == "CONFIG":
            subject = key.get("subject")
            level = (value or {}).get("compatibilityLevel")
            if level:
                self._config[subject] = level
            else:
                self._config.pop(subject, None)
        elif kind == "SCHEMA":
            subject, version = key.get("subject"), key.get("version")
            if value is None:
                versions = self._subjects.get(subject, {})
                versions.pop(version, None)
                if not versions:
                    self._subjects.pop(subject, None)
                return
            sid = int(value["id"])
            if sid not in self._by_id:
                extra = {k: value[k] for k in ("metadata", "ruleSet") if value.get(k)}
                entry = SchemaEntry(sid, (value.get("schemaType") or "AVRO").upper(),
                                    value["schema"], list(value.get("references") or []), extra)
                self._by_id[sid] = entry
                self._id_of.setdefault(self._identity(entry, validate=False), sid)
            self._next_id = max(self._next_id, sid + 1)
            self._subjects.setdefault(subject, {})[version] = Version(
                subject, version, sid, bool(value.get("deleted")))
        # other key types (NOOP, DELETE_SUBJECT, MODE, ...) carry nothing we keep

    # ------------------------------------------------------------------ helpers
    def _identity(self, entry: SchemaEntry, *, validate: bool, normalize: bool = False) -> tuple:
        if entry.parsed is None:
            try:
                entry.parsed = schemas.parse(entry.schema_type, entry.text,
                                             self._reference_texts(entry.references),
                                             validate=validate, normalize=normalize)
            except (schemas.InvalidSchema, RegistryError):
                if validate:
                    raise
                entry.parsed = schemas.Parsed(entry.schema_type, entry.text, entry.text)
        refs = tuple((r.get("name"), r.get("subject"), r.get("version")) for r in entry.references)
        extra = json.dumps(entry.extra, sort_keys=True)
        return (entry.schema_type, entry.parsed.canonical, refs, extra)

    def _reference_texts(self, references, seen=None) -> list[tuple[str, str]]:
        """(type, text) of every schema `references` reach, dependencies first."""
        seen = set() if seen is None else seen
        out = []
        for ref in references:
            v = self._find_version(ref.get("subject"), ref.get("version"), deleted=True)
            if v is None:
                raise invalid_schema(f"Invalid schema reference {json.dumps(ref)}: subject "
                                     f"'{ref.get('subject')}' version {ref.get('version')} "
                                     f"not found")
            if (v.subject, v.version) in seen:
                continue
            seen.add((v.subject, v.version))
            entry = self._by_id[v.id]
            out += self._reference_texts(entry.references, seen)
            out.append((entry.schema_type, entry.text))
        return out

    def _candidate(self, body, normalize: bool) -> tuple[SchemaEntry, tuple]:
        """An unsaved `SchemaEntry` (id 0) for a request body, and its identity (42201)."""
        if not isinstance(body, dict):
            raise invalid_schema("The request body must be a JSON object")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise invalid_schema("Empty schema")
        refs = []
        for ref in body.get("references") or []:
            if not isinstance(ref, dict) or not ref.get("subject") or ref.get("version") is None:
                raise invalid_schema(f"Invalid schema reference {json.dumps(ref)}")
            v = self._find_version(ref["subject"], ref["version"], deleted=True)
            version = v.version if v is not None else ref["version"]
            refs.append({"name": ref.get("name"), "subject": ref["subject"], "version": version})
        extra = {k: body[k] for k in ("metadata", "ruleSet") if body.get(k)}
        entry = SchemaEntry(0, (body.get("schemaType") or "AVRO").upper(), text, refs, extra)
        try:
            identity = self._identity(entry, validate=True, normalize=normalize)
        except schemas.InvalidSchema as exc:
            raise invalid_schema(f"Invalid schema {text}, details: {exc}") from None
        entry.text = entry.parsed.text
        return entry, identity

    def _versions(self, subject: str, deleted: bool) -> list[Version]:
        return sorted((v for v in self._subjects.get(subject, {}).values()
                       if deleted or not v.deleted), key=lambda v: v.version)

    def _find_version(self, subject, version, *, deleted: bool) -> Version | None:
        found = self._versions(subject, deleted)
        if not found:
            return None
        if version is None or str(version).lower() == "latest" or str(version) == "-1":
            return found[-1]
        try:
            number = int(version)
        except (TypeError, ValueError):
            return None
        return next((v for v in found if v.version == number), None)

    def _get(self, subject: str, version, deleted: bool) -> Version:
        number = parse_version(version)
        if not self._versions(subject, deleted):
            raise subject_not_found(subject)
        v = self._find_version(subject, number, deleted=deleted)
        if v is None:
            raise version_not_found(version)
        return v

    def _level(self, subject: str | None) -> str:
        return self._config.get(subject) or self._config.get(None) or DEFAULT_LEVEL

    def _parsed(self, v: Version) -> schemas.Parsed:
        entry = self._by_id[v.id]
        self._identity(entry, validate=False)
        return entry.parsed

    def _problems(self, subject: str, new: SchemaEntry, previous: list[Version]) -> list[str]:
        return schemas.compatibility(self._level(subject), new.parsed,
                                     [self._parsed(v) for v in previous])

    def _referrers(self, subject: str, version: int) -> list[int]:
        ids = set()
        for versions in self._subjects.values():
            for v in versions.values():
                if v.deleted:
                    continue
                for ref in self._by_id[v.id].references:
                    if ref.get("subject") == subject and ref.get("version") == version:
                        ids.add(v.id)
        return sorted(ids)

    def _check_unreferenced(self, v: Version) -> None:
        if self._referrers(v.subject, v.version):
            raise RegistryError(422, 42206, f"One or more references exist to the schema "
                                f"{{magic=1,keytype=SCHEMA,subject={v.subject},"
                                f"version={v.version}}}.")

    def _response(self, v: Version) -> dict:
        return {"subject": v.subject, "version": v.version, "id": v.id,
                **self._by_id[v.id].body()}
