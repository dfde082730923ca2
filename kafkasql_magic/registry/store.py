"""The registry's operations, one per REST endpoint: register, look up, list, delete, config,
compatibility checks. They answer with JSON-able values, or raise `RegistryError` carrying the
HTTP status and Confluent's error code.

One lock covers checking, writing to the log and applying, so concurrent registrations of one
schema get one id and versions never collide.
"""

from __future__ import annotations

from kafkasql_magic.registry.compat import LEVELS
from kafkasql_magic.registry.state import (
    DEFAULT_LEVEL, RegistryError, State, config_key, schema_key, Version, parse_version,
    schema_not_found, subject_not_found, version_not_found,
)

__all__ = ["RegistryError", "Store"]


class Store(State):
    """The registry: `State` plus the operations the HTTP server exposes."""

    # ------------------------------------------------------------------ changes
    def register(self, subject: str, body, *, normalize: bool = False) -> dict:
        with self.lock:
            entry, identity = self._candidate(body, normalize)
            live = self._versions(subject, deleted=False)
            sid = self._id_of.get(identity)
            for v in reversed(live):
                if v.id == sid:
                    return {"id": sid}
            problems = self._problems(subject, entry, live)
            if problems:
                raise RegistryError(409, 409, f"Schema being registered is incompatible with an "
                                    f"earlier schema for subject \"{subject}\", details: "
                                    f"[{', '.join(problems)}]")
            if sid is None:
                sid = self._next_id
            every = self._versions(subject, deleted=True)
            version = every[-1].version + 1 if every else 1
            value = {"subject": subject, "version": version, "id": sid, "schema": entry.text,
                     "deleted": False}
            if entry.schema_type != "AVRO":
                value["schemaType"] = entry.schema_type
            if entry.references:
                value["references"] = entry.references
            value.update(entry.extra)
            self._write(schema_key(subject, version), value)
            return {"id": sid}

    def delete_version(self, subject: str, version: str, *, permanent: bool) -> int:
        with self.lock:
            number = parse_version(version)
            if not self._versions(subject, deleted=True):
                raise subject_not_found(subject)
            # `latest` is the latest live version for a soft delete, any for a permanent one
            v = self._find_version(subject, number, deleted=permanent or number is not None)
            if v is None:
                raise version_not_found(version)
            if permanent and not v.deleted:
                raise RegistryError(404, 40407, f"Subject '{subject}' Version {v.version} was not "
                                    f"deleted first before being permanently deleted")
            if not permanent and v.deleted:
                raise RegistryError(404, 40406, f"Subject '{subject}' Version {v.version} was soft "
                                    f"deleted. Set permanent=true to delete permanently")
            self._check_unreferenced(v)
            self._write_version(v, None if permanent else True)
            return v.version

    def _write_version(self, v: Version, deleted: bool | None) -> None:
        """Soft-delete `v` (deleted=True) or delete it permanently (None)."""
        value = None
        if deleted is not None:
            value = {"subject": v.subject, "version": v.version, "id": v.id,
                     **self._by_id[v.id].body(), "deleted": deleted}
        self._write(schema_key(v.subject, v.version), value)

    def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        with self.lock:
            every = self._versions(subject, deleted=True)
            if not every:
                raise subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            if permanent and live:
                raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before "
                                    f"being permanently deleted")
            if not permanent and not live:
                raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted. Set "
                                    f"permanent=true to delete permanently")
            targets = every if permanent else live
            for v in targets:
                self._check_unreferenced(v)
            for v in targets:
                self._write_version(v, None if permanent else True)
            if permanent and subject in self._config:
                self._write(config_key(subject), None)
            return [v.version for v in targets]

    def set_config(self, subject: str | None, body) -> dict:
        level = body.get("compatibility") if isinstance(body, dict) else None
        if isinstance(body, dict) and level is None:
            level = body.get("compatibilityLevel")
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, "
                                "backward, forward, full, backward_transitive, "
                                "forward_transitive, and full_transitive")
        with self.lock:
            self._write(config_key(subject), {"compatibilityLevel": level.upper()})
            return {"compatibility": level.upper()}

    def delete_config(self, subject: str | None) -> dict:
        with self.lock:
            old = self._config.get(subject)
            if subject is not None and old is None:
                if subject not in self._subjects:
                    raise subject_not_found(subject)
                raise self._no_subject_config(subject)
            if old is not None:
                self._write(config_key(subject), None)
            return {"compatibilityLevel": old or DEFAULT_LEVEL}

    @staticmethod
    def _no_subject_config(subject: str) -> RegistryError:
        return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level "
                             f"compatibility configured")

    # ------------------------------------------------------------------ queries
    def get_config(self, subject: str | None, *, default_to_global: bool = False) -> dict:
        with self.lock:
            if subject is None:
                return {"compatibilityLevel": self._level(None)}
            level = self._config.get(subject)
            if level is None:
                if not default_to_global:
                    raise self._no_subject_config(subject)
                level = self._level(None)
            return {"compatibilityLevel": level}

    def lookup(self, subject: str, body, *, deleted: bool = False,
               normalize: bool = False) -> dict:
        with self.lock:
            found = self._versions(subject, deleted)
            if not found:
                raise subject_not_found(subject)
            _entry, identity = self._candidate(body, normalize)
            sid = self._id_of.get(identity)
            matches = [v for v in found if v.id == sid]
            if not matches:
                raise schema_not_found()
            live = [v for v in matches if not v.deleted]
            return self._response((live or matches)[-1])

    def schema_by_id(self, sid: int) -> dict:
        with self.lock:
            entry = self._by_id.get(sid)
            if entry is None:
                raise schema_not_found(f"Schema {sid} not found")
            return entry.body()

    def versions_of_id(self, sid: int, *, deleted: bool = False) -> list[dict]:
        with self.lock:
            if sid not in self._by_id:
                raise schema_not_found(f"Schema {sid} not found")
            found = [v for versions in self._subjects.values() for v in versions.values()
                     if v.id == sid and (deleted or not v.deleted)]
            found.sort(key=lambda v: (v.subject, v.version))
            return [{"subject": v.subject, "version": v.version} for v in found]

    def subjects(self, *, prefix: str | None = None, deleted: bool = False,
                 deleted_only: bool = False) -> list[str]:
        with self.lock:
            out = []
            for subject, versions in self._subjects.items():
                if prefix and not subject.startswith(prefix):
                    continue
                flags = {v.deleted for v in versions.values()}
                if deleted_only:
                    keep = flags == {True}  # soft-deleted subjects
                else:
                    keep = deleted or False in flags
                if keep:
                    out.append(subject)
            return sorted(out)

    def versions(self, subject: str, *, deleted: bool = False,
                 deleted_only: bool = False) -> list[int]:
        with self.lock:
            found = self._versions(subject, deleted or deleted_only)
            if deleted_only:
                found = [v for v in found if v.deleted]
            if not found:
                raise subject_not_found(subject)
            return [v.version for v in found]

    def version(self, subject: str, version: str, *, deleted: bool = False) -> dict:
        with self.lock:
            return self._response(self._get(subject, version, deleted))

    def referenced_by(self, subject: str, version: str) -> list[int]:
        with self.lock:
            v = self._get(subject, version, deleted=False)
            return self._referrers(v.subject, v.version)

    def latest_with_metadata(self, subject: str, wanted: dict, *, deleted: bool = False) -> dict:
        with self.lock:
            found = self._versions(subject, deleted)
            if not found:
                raise subject_not_found(subject)
            for v in reversed(found):
                props = (self._by_id[v.id].extra.get("metadata") or {}).get("properties") or {}
                if all(props.get(k) == val for k, val in wanted.items()):
                    return self._response(v)
            raise schema_not_found(f"Schema with metadata {wanted} not found")

    def test_compatibility(self, subject: str, version: str | None, body, *,
                           verbose: bool = False, normalize: bool = False) -> dict:
        """Against one version (`version`, `latest` included) or, with None, against every
        version the subject's level asks for."""
        with self.lock:
            if version is None:
                previous = self._versions(subject, deleted=False)
            else:
                number = parse_version(version)
                if not self._versions(subject, deleted=False):
                    if number is not None:
                        raise subject_not_found(subject)
                    previous = []
                else:
                    v = self._find_version(subject, number, deleted=False)
                    if v is None:
                        raise version_not_found(version)
                    previous = [v]
            entry, _identity = self._candidate(body, normalize)
            problems = self._problems(subject, entry, previous)
            out = {"is_compatible": not problems}
            if verbose:
                out["messages"] = problems
            return out
