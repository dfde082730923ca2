"""Protobuf schemas as the registry holds them -> message descriptors, without a system protoc.

A registered PROTOBUF schema is either `.proto` text (what people register by hand, what the
Confluent registry answers by default) or a base64 `FileDescriptorProto` (what confluent-kafka's
`ProtobufSerializer` registers). Text is compiled with the protoc bundled in `grpcio-tools`
(`grpc_tools.protoc`, a Python module) into a descriptor set; references are written beside it
under their import names. Imports of well-known files (`google/protobuf/*`, `google/type/*`,
`confluent/type/decimal.proto`) not given as references come from the protobuf runtime's own
descriptors. Message classes come from `protobuf`'s message factory.

Message indexes (the Confluent framing after the schema id) pick the message: a path into the
file's top-level messages, then nested messages.
"""

from __future__ import annotations

import base64
import os
import re
import tempfile
from typing import Sequence

MAIN_FILE = "kafkasql_schema.proto"
#: Python modules whose import registers a well-known file in the default descriptor pool.
WELL_KNOWN_MODULES = (
    "google.protobuf.timestamp_pb2", "google.protobuf.duration_pb2", "google.protobuf.wrappers_pb2",
    "google.protobuf.struct_pb2", "google.protobuf.any_pb2", "google.protobuf.empty_pb2",
    "google.protobuf.descriptor_pb2", "google.type.date_pb2", "google.type.timeofday_pb2",
    "confluent_kafka.schema_registry.confluent.type.decimal_pb2", "confluent_kafka.schema_registry.confluent.meta_pb2",
)
#: an import statement, at a line's start or after another statement (schemas written on one line,
#: as ksqlDB's tests register them), its file name in either quotes
_IMPORT = re.compile(r'(?:^|(?<=;))\s*import\s+(?:public\s+|weak\s+)?(["\'])([^"\']+)\1\s*;', re.M)


class ProtobufSchemaError(ValueError):
    """A registered schema that does not compile, or message indexes it does not have."""


def as_file_proto(text: str, name: str):
    """A base64 FileDescriptorProto as such, or None when `text` is .proto source."""
    from google.protobuf import descriptor_pb2

    stripped = text.strip()
    if not stripped or any(c.isspace() for c in stripped) or ";" in stripped:
        return None
    try:
        data = base64.b64decode(stripped, validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(data)
    except Exception:  # noqa: BLE001 - not base64, or not a FileDescriptorProto (DecodeError)
        return None
    if not proto.name:
        proto.name = name
    return proto


def compile_text(text: str, references: Sequence[tuple[str, str]] = (), main_name: str = MAIN_FILE) -> list:
    """FileDescriptorProtos (dependencies first) of `.proto` text and its (name, text) references."""
    import importlib.resources

    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    text = with_meta_import(text)
    with tempfile.TemporaryDirectory(prefix="kafkasql-proto-") as tmp:
        for name, body in [*references, (main_name, text)]:
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(body)
        out = os.path.join(tmp, "set.pb")
        includes = [tmp, str(importlib.resources.files("grpc_tools") / "_proto"), *_extra_includes()]
        args = ["protoc", *[f"-I{i}" for i in includes], "--include_imports", f"--descriptor_set_out={out}"]
        known = _runtime_only_imports([text, *(b for _, b in references)], includes)
        if known.file:
            known_path = os.path.join(tmp, "known.pb")
            with open(known_path, "wb") as fh:
                fh.write(known.SerializeToString())
            args.append(f"--descriptor_set_in={known_path}")
        errors = os.path.join(tmp, "errors.txt")
        code = _run_protoc(protoc, [*args, main_name], errors)
        if code != 0:
            with open(errors, encoding="utf-8", errors="replace") as fh:
                detail = fh.read().strip().replace(tmp + os.sep, "")
            raise ProtobufSchemaError(f"The PROTOBUF schema does not compile: {detail or 'protoc failed'}")
        with open(out, "rb") as fh:
            return list(descriptor_pb2.FileDescriptorSet.FromString(fh.read()).file)


_SYNTAX = re.compile(r'^\s*syntax\s*=\s*["\'][^"\']*["\']\s*;')
META = "confluent/meta.proto"


def with_meta_import(text: str) -> str:
    """`text` importing confluent/meta.proto where it uses Confluent's options (`(confluent.field_meta)`,
    a DECIMAL's precision and scale) without importing it, as ksqlDB's tests register schemas and
    Confluent's parser takes them. The import goes on the first line, so errors keep their lines."""
    if "(confluent." not in text or META in imports_of(text):
        return text
    syntax = _SYNTAX.match(text)
    at = syntax.end() if syntax else 0
    return f'{text[:at]} import "{META}"; {text[at:]}'


def _runtime_only_imports(texts, includes):
    """A FileDescriptorSet of the imported well-known files that exist only as descriptors in the
    protobuf runtime (no .proto on disk, e.g. confluent/type/decimal.proto), for protoc's
    --descriptor_set_in."""
    from google.protobuf import descriptor_pb2

    found = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()
    pending = [name for text in texts for name in imports_of(text)]
    while pending:
        name = pending.pop()
        if name in seen or any(os.path.exists(os.path.join(i, name)) for i in includes):
            continue
        seen.add(name)
        proto = _well_known(name)
        if proto is not None:
            pending += list(proto.dependency)
            found.file.append(proto)
    return found


def _run_protoc(protoc, args, errors_path) -> int:
    """protoc in-process, its stderr (the compile errors) captured to a file."""
    import sys

    saved = os.dup(2)
    with open(errors_path, "w") as fh:
        sys.stderr.flush()
        os.dup2(fh.fileno(), 2)
        try:
            return protoc.main(args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _extra_includes() -> list[str]:
    """Where google/type/*.proto and confluent/type/decimal.proto live in the installed packages."""
    import importlib.util

    found = []
    for module in ("google.type", "confluent_kafka.schema_registry"):
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            continue
        if spec and spec.submodule_search_locations:
            root = list(spec.submodule_search_locations)[0]
            found.append(os.path.dirname(os.path.dirname(root)) if module == "google.type"
                         else root)
    return found


def _well_known(name: str):
    """The FileDescriptorProto of a well-known file from the runtime's default pool, or None."""
    import importlib

    from google.protobuf import descriptor_pb2, descriptor_pool

    for module in WELL_KNOWN_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
    try:
        fd = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(proto)
    return proto


class Schema:
    """A compiled registered schema: its pool and main file; `message(indexes)` picks a message."""

    def __init__(self, text: str, references: Sequence[tuple[str, str]] = ()):
        from google.protobuf import descriptor_pool

        main = as_file_proto(text, MAIN_FILE)
        named = {}
        text_refs = []
        for name, body in references:
            proto = as_file_proto(body, name)
            if proto is not None:
                named[proto.name] = proto
            else:
                text_refs.append((name, body))
        if main is None:
            files = compile_text(text, text_refs)
            main = files[-1]
            named.update({f.name: f for f in files})
        else:
            for name, body in text_refs:
                for f in compile_text(body, [r for r in text_refs if r[0] != name], main_name=name):
                    named.setdefault(f.name, f)
        named[main.name] = main
        self.pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()
        add_with_imports(self.pool, main.name, named, added, lambda name: ProtobufSchemaError(
            f"The PROTOBUF schema imports {name}, which the registry did not provide"))
        self.file = self.pool.FindFileByName(main.name)


    def message(self, indexes: Sequence[int] = (0,)):
        """The message descriptor at `indexes` (Confluent's message-index path)."""
        indexes = list(indexes) or [0]
        candidates = list(self.file.message_types_by_name.values())  # declaration order
        desc = None
        for depth, i in enumerate(indexes):
            if i >= len(candidates):
                raise ProtobufSchemaError(
                    f"Message index {indexes} does not exist in the PROTOBUF schema (file {self.file.name})")
            desc = candidates[i]
            candidates = list(desc.nested_types)
        if desc is None:
            raise ProtobufSchemaError(f"The PROTOBUF schema {self.file.name} has no messages")
        return desc

    def message_class(self, indexes: Sequence[int] = (0,)):
        from google.protobuf import message_factory

        return message_factory.GetMessageClass(self.message(indexes))


def add_with_imports(pool, name: str, named: dict, added: set, missing) -> None:
    """Add file `name` (its FileDescriptorProto in `named`, else a well-known file) to `pool`
    after the files it imports; `missing(name)` is the error for a file found nowhere."""
    if name in added:
        return
    proto = named.get(name) or _well_known(name)
    if proto is None:
        raise missing(name)
    added.add(name)
    for dep in proto.dependency:
        add_with_imports(pool, dep, named, added, missing)
    pool.Add(proto)


def imports_of(text: str) -> list[str]:
    """The files `.proto` text imports, in order."""
    return [name for _, name in _IMPORT.findall(text)]
