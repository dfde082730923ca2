"""The embedded Schema Registry, driven by confluent-kafka's own client and serializers."""

import http.client
import json
import threading
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkasql_magic.local.broker import Broker
from kafkasql_magic.local.stack import LocalStack
from kafkasql_magic.registry import RegistryServer
from kafkasql_magic.registry import compat


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker):
    with RegistryServer(broker.bootstrap_servers) as reg:
        yield reg


@pytest.fixture
def client(registry):
    return SchemaRegistryClient({"url": registry.url})


@pytest.fixture
def subject():
    return f"s-{uuid.uuid4().hex[:10]}-value"


def avro(fields, name="User", **extra):
    return Schema(json.dumps({"type": "record", "name": name, "namespace": "com.acme",
                              "fields": fields, **extra}), "AVRO")


V1 = [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]
V2 = V1 + [{"name": "email", "type": ["null", "string"], "default": None}]


def call(registry, method, path, body=None):
    """(status, content type, parsed JSON or text) of a raw request."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(registry.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, ctype, raw = resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as exc:
        status, ctype, raw = exc.code, exc.headers["Content-Type"], exc.read()
    try:
        return status, ctype, json.loads(raw)
    except ValueError:
        return status, ctype, raw.decode()


def sr_error(fn, *args, **kwargs) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as info:
        fn(*args, **kwargs)
    return info.value


# ---------------------------------------------------------------------------- basics
def test_root_types_and_content_type(registry, client):
    assert call(registry, "GET", "/") == (200, "application/vnd.schemaregistry.v1+json", {})
    assert client.get_schema_types() == ["JSON", "PROTOBUF", "AVRO"]
    status, _ctype, body = call(registry, "GET", "/nope")
    assert status == 404 and body["error_code"] == 404


def test_register_lookup_and_get(registry, client, subject):
    sid = client.register_schema(subject, avro(V1))
    # the same schema again (reformatted, keys reordered) keeps its id and adds no version
    same = Schema(json.dumps({"namespace": "com.acme", "name": "User", "type": "record",
                              "fields": V1}, indent=2), "AVRO")
    assert SchemaRegistryClient({"url": registry.url}).register_schema(subject, same) == sid
    assert client.get_versions(subject) == [1]
    # another subject: same global id
    other = subject.replace("-value", "-key")
    assert client.register_schema(other, avro(V1)) == sid

    found = SchemaRegistryClient({"url": registry.url}).lookup_schema(subject, same)
    assert (found.subject, found.schema_id, found.version) == (subject, sid, 1)
    assert json.loads(client.get_schema(sid).schema_str) == json.loads(avro(V1).schema_str)

    sid2 = client.register_schema(subject, avro(V2))
    assert sid2 != sid and client.get_versions(subject) == [1, 2]
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id, latest.schema.schema_type) == (2, sid2, "AVRO")
    assert client.get_version(subject, 1).schema_id == sid
    assert subject in client.get_subjects() and other in client.get_subjects()
    assert client.get_subjects_by_schema_id(sid) == sorted([subject, other])
    assert sorted((v.subject, v.version) for v in client.get_schema_versions(sid)) == sorted(
        [(subject, 1), (other, 1)])

    # raw shapes: AVRO responses carry no schemaType; the /schema endpoints serve the text
    status, ctype, body = call(registry, "GET", f"/subjects/{subject}/versions/latest")
    assert status == 200 and ctype == "application/vnd.schemaregistry.v1+json"
    assert set(body) == {"subject", "version", "id", "schema"}
    assert call(registry, "GET", f"/subjects/{subject}/versions/1/schema")[2] == json.loads(
        avro(V1).schema_str)
    assert call(registry, "GET", f"/schemas/ids/{sid2}/schema")[2]["fields"][2]["name"] == "email"
    assert call(registry, "GET", f"/subjects/{subject}/versions/-1")[2]["version"] == 2
    assert client.get_versions(subject, offset=1, limit=1) == [2]
    # subject names are path segments: "/" and spaces arrive URL-encoded
    odd = f"team/{subject} with space"
    assert client.register_schema(odd, avro(V1)) == sid
    assert client.get_version(odd, 1).subject == odd and odd in client.get_subjects()


def test_error_codes(registry, client, subject):
    client.register_schema(subject, avro(V1))
    cases = [
        (lambda: client.get_versions("missing-subject"), 404, 40401),
        (lambda: client.get_version("missing-subject", 1), 404, 40401),
        (lambda: client.get_version(subject, 7), 404, 40402),
        (lambda: client.get_schema(987654), 404, 40403),
        (lambda: client.lookup_schema(subject, avro(V2)), 404, 40403),
        (lambda: client.lookup_schema("missing-subject", avro(V1)), 404, 40401),
        (lambda: client.register_schema(subject, Schema("{not json", "AVRO")), 422, 42201),
        (lambda: client.register_schema(  # an unknown type
            subject, avro([{"name": "a", "type": "nope"}])), 422, 42201),
        (lambda: client.register_schema(  # a default that does not match its type
            subject, avro([{"name": "a", "type": "int", "default": "x"}])), 422, 42201),
        (lambda: client.set_compatibility(subject, "SIDEWAYS"), 422, 42203),
    ]
    for request, status, code in cases:
        err = sr_error(request)
        assert (err.http_status_code, err.error_code) == (status, code), err
    for bad in ("0", "abc", "-2"):
        status, _ctype, body = call(registry, "GET", f"/subjects/{subject}/versions/{bad}")
        assert (status, body["error_code"]) == (422, 42202)


# ---------------------------------------------------------------------------- compatibility
def test_compatibility_enforced_on_register(client, subject):
    client.register_schema(subject, avro(V1))
    # a new field without a default cannot read old data: BACKWARD (the default) rejects it
    bad = avro(V1 + [{"name": "age", "type": "int"}])
    err = sr_error(client.register_schema, subject, bad)
    assert (err.http_status_code, err.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in err.error_message
    assert client.test_compatibility(subject, bad) is False
    assert client.test_compatibility(subject, avro(V2), version=1) is True
    # compatible evolution: a field with a default, a promotion int -> long
    promoted = [{"name": "id", "type": "long"}] + V2[1:]
    assert client.register_schema(subject, avro(V2))
    assert client.register_schema(subject, avro(promoted))
    assert client.get_versions(subject) == [1, 2, 3]
    # ... and back from long to int is not
    assert client.test_compatibility(subject, avro(V2)) is False


def test_compatibility_levels_and_config(registry, client, subject):
    assert client.get_compatibility() == "BACKWARD"
    err = sr_error(client.get_compatibility, subject)
    assert err.error_code == 40408  # no subject-level config, as Confluent answers
    status, _ctype, body = call(registry, "GET", f"/config/{subject}?defaultToGlobal=true")
    assert body == {"compatibilityLevel": "BACKWARD"}

    client.register_schema(subject, avro(V1))
    removed = avro(V1[:1])  # dropping a field: BACKWARD yes, FORWARD no (old readers need it)
    assert client.set_compatibility(subject, "FORWARD") == {"compatibility": "FORWARD"}
    assert client.get_compatibility(subject) == "FORWARD"
    assert client.test_compatibility(subject, removed) is False
    added = avro(V1 + [{"name": "age", "type": "int"}])  # new field without default: FORWARD ok
    assert client.test_compatibility(subject, added) is True
    client.set_compatibility(subject, "full")
    assert client.get_compatibility(subject) == "FULL"
    assert client.test_compatibility(subject, removed) is False
    assert client.test_compatibility(subject, added) is False
    assert client.test_compatibility(subject, avro(V2)) is True
    client.set_compatibility(subject, "NONE")
    assert client.register_schema(subject, avro([{"name": "x", "type": "bytes"}]))
    assert client.delete_config(subject).compatibility_level.value == "NONE"
    assert sr_error(client.get_compatibility, subject).error_code == 40408


def test_transitive_levels(registry, client, subject):
    v1 = avro([{"name": "x", "type": "int"}])
    v2 = avro([{"name": "y", "type": "int", "default": 0}])  # drops x
    v3 = avro([{"name": "y", "type": "int", "default": 0},
               {"name": "x", "type": "string", "default": ""}])  # x back, as a string
    client.register_schema(subject, v1)
    client.register_schema(subject, v2)
    assert client.test_compatibility(subject, v3) is True  # BACKWARD: only against v2
    client.set_compatibility(subject, "BACKWARD_TRANSITIVE")
    assert client.test_compatibility_all_versions(subject, v3) is False  # v1's x is an int
    err = sr_error(client.register_schema, subject, v3)
    assert err.error_code == 409 and "TYPE_MISMATCH" in err.error_message
    status, _ctype, body = call(registry, "POST",
                                f"/compatibility/subjects/{subject}/versions/1?verbose=true",
                                {"schema": v3.schema_str})
    assert status == 200 and body["is_compatible"] is False and body["messages"]


def _avro_check(reader, writer) -> bool:
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
    from avro.schema import parse

    result = ReaderWriterCompatibilityChecker().get_compatibility(
        parse(json.dumps(reader)), parse(json.dumps(writer)))
    return result.compatibility is SchemaCompatibilityType.compatible


def _rec(*fields, name="R", **extra):
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def _f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


COMPAT_SCHEMAS = [
    "int", "long", "float", "double", "string", "bytes", "boolean", "null",
    ["null", "int"], ["null", "long"], ["int", "string"], ["null", "string", "long"],
    {"type": "array", "items": "int"}, {"type": "array", "items": "long"},
    {"type": "map", "values": "string"}, {"type": "map", "values": "bytes"},
    {"type": "enum", "name": "E", "symbols": ["A", "B"]},
    {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]},
    {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"},
    {"type": "enum", "name": "F", "symbols": ["A", "B"]},
    {"type": "fixed", "name": "X", "size": 4}, {"type": "fixed", "name": "X", "size": 8},
    _rec(_f("a", "int")),
    _rec(_f("a", "long")),
    _rec(_f("a", "int"), _f("b", "string")),
    _rec(_f("a", "int"), _f("b", "string", default="")),
    _rec(_f("a", ["null", "int"], default=None)),
    _rec(_f("c", "int", aliases=["a"])),
    _rec(_f("a", "int"), name="Other"),
    _rec(_f("a", "int"), name="Other", aliases=["R"]),
    _rec(_f("n", _rec(_f("x", "int"), name="N"))),
    _rec(_f("n", _rec(_f("x", "int"), _f("y", "double"), name="N"))),
    _rec(_f("n", _rec(_f("x", "float"), _f("y", "double", default=0.0), name="N"))),
    _rec(_f("items", {"type": "array", "items": _rec(_f("v", "int"), name="I")})),
    _rec(_f("items", {"type": "array", "items": _rec(_f("v", "string"), name="I")})),
    _rec(_f("next", ["null", "R"], default=None), _f("v", "int")),  # recursive
    _rec(_f("next", ["null", "R"], default=None), _f("v", "long")),
]


def test_avro_resolution_rules_match_apache_avro():
    """Every (reader, writer) pair of a varied set: our checker agrees with Apache Avro's."""
    disagreements = []
    for reader in COMPAT_SCHEMAS:
        for writer in COMPAT_SCHEMAS:
            ours = compat.can_read(compat.AvroSchema(json.dumps(reader)),
                                   compat.AvroSchema(json.dumps(writer)))
            if ours != _avro_check(reader, writer):
                disagreements.append((reader, writer, ours))
    assert not disagreements


def test_compat_levels_directions():
    old = compat.AvroSchema(json.dumps(_rec(_f("a", "int"))))
    with_default = compat.AvroSchema(json.dumps(_rec(_f("a", "int"), _f("b", "int", default=1))))
    without = compat.AvroSchema(json.dumps(_rec(_f("a", "int"), _f("b", "int"))))
    assert compat.check("BACKWARD", with_default, [old]) == []
    assert compat.check("BACKWARD", without, [old])
    assert compat.check("FORWARD", without, [old]) == []
    assert compat.check("FULL", with_default, [old]) == []
    assert compat.check("FULL", without, [old])
    assert compat.check("NONE", without, [old]) == []
    # identity: namespace folded into the name, primitive objects collapsed, order kept
    a = compat.AvroSchema('{"type":"record","name":"R","namespace":"x","fields":'
                          '[{"name":"f","type":{"type":"int"}}]}')
    b = compat.AvroSchema('{"name":"x.R","type":"record","fields":[{"type":"int","name":"f"}]}')
    assert a == b and a.canonical == b.canonical


# ---------------------------------------------------------------------------- serializers
def test_avro_serializer_round_trip(registry, client):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    schema = json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "price", "type": ["null", "double"], "default": None}]})
    ser = AvroSerializer(client, schema, conf={"auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    record = {"id": 7, "item": "book", "tags": ["a", "b"], "price": 9.5}
    data = ser(record, ctx)
    sid = client.get_latest_version(f"{topic}-value").schema_id
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == sid
    fresh = SchemaRegistryClient({"url": registry.url})  # no cache: fetches by id
    assert AvroDeserializer(fresh)(data, ctx) == record


def test_json_schema_type(registry, client, subject):
    topic = subject[:-len("-value")]
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                         "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    ctx = SerializationContext(topic, MessageField.VALUE)
    data = JSONSerializer(schema, client)({"id": 1, "item": "pen"}, ctx)
    fresh = SchemaRegistryClient({"url": registry.url})
    out = JSONDeserializer(None, schema_registry_client=fresh)(data, ctx)
    assert out == {"id": 1, "item": "pen"}
    latest = client.get_latest_version(subject)
    assert latest.schema.schema_type == "JSON"
    assert json.loads(latest.schema.schema_str)["title"] == "Order"
    assert call(registry, "GET", f"/schemas/ids/{latest.schema_id}")[2]["schemaType"] == "JSON"
    err = sr_error(client.register_schema, subject, Schema('{"type": 12}', "JSON"))
    assert err.error_code == 42201


PROTO = """syntax = "proto3";
package acme;

message Order {
  int64 id = 1;
  string item = 2;
}
"""


def test_protobuf_text_stored_and_served(registry, client, subject):
    sid = client.register_schema(subject, Schema(PROTO, "PROTOBUF"))
    got = SchemaRegistryClient({"url": registry.url}).get_schema(sid)
    assert (got.schema_str, got.schema_type) == (PROTO, "PROTOBUF")
    body = call(registry, "GET", f"/subjects/{subject}/versions/1")[2]
    assert body["schemaType"] == "PROTOBUF" and body["schema"] == PROTO
    # whitespace-only changes are the same schema
    assert client.register_schema(subject, Schema(PROTO.replace("  ", "    "), "PROTOBUF")) == sid
    # another type under the same subject is incompatible
    err = sr_error(client.register_schema, subject, avro(V1))
    assert err.error_code == 409


def test_references_stored_and_served(registry, client, subject):
    base = f"addr-{uuid.uuid4().hex[:8]}"
    address = json.dumps({"type": "record", "name": "Address", "namespace": "com.acme",
                          "fields": [{"name": "city", "type": "string"}]})
    base_id = client.register_schema(base, Schema(address, "AVRO"))
    person = json.dumps({"type": "record", "name": "Person", "namespace": "com.acme",
                         "fields": [{"name": "name", "type": "string"},
                                    {"name": "home", "type": "com.acme.Address"}]})
    refs = [SchemaReference("com.acme.Address", base, 1)]
    # without its reference the type is unknown
    assert sr_error(client.register_schema, subject, Schema(person, "AVRO")).error_code == 42201
    sid = client.register_schema(subject, Schema(person, "AVRO", refs))
    got = SchemaRegistryClient({"url": registry.url}).get_version(subject, 1)
    assert [(r.name, r.subject, r.version) for r in got.schema.references] == [
        ("com.acme.Address", base, 1)]
    assert client.get_referenced_by(base, 1) == [sid]
    body = call(registry, "GET", f"/schemas/ids/{sid}")[2]
    assert body["references"] == [{"name": "com.acme.Address", "subject": base, "version": 1}]
    # a referenced schema cannot be deleted
    assert sr_error(client.delete_subject, base).error_code == 42206
    assert sr_error(client.register_schema, subject, Schema(person, "AVRO", [
        SchemaReference("com.acme.Address", "no-such-subject", 1)])).error_code == 42201
    # the serializers resolve references through the registry
    ctx = SerializationContext(subject[:-len("-value")], MessageField.VALUE)
    ser = AvroSerializer(client, Schema(person, "AVRO", refs),
                         conf={"auto.register.schemas": False, "use.latest.version": True})
    data = ser({"name": "Ann", "home": {"city": "Oslo"}}, ctx)
    assert int.from_bytes(data[1:5], "big") == sid
    out = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))(data, ctx)
    assert out == {"name": "Ann", "home": {"city": "Oslo"}} and base_id != sid


# ---------------------------------------------------------------------------- deletes
def test_soft_and_permanent_deletes(registry, client, subject):
    client.register_schema(subject, avro(V1))
    client.register_schema(subject, avro(V2))
    # permanent before soft: refused
    err = sr_error(client.delete_version, subject, 1, permanent=True)
    assert (err.http_status_code, err.error_code) == (404, 40407)
    assert sr_error(client.delete_subject, subject, permanent=True).error_code == 40405

    assert client.delete_version(subject, 1) == 1
    assert client.get_versions(subject) == [2]
    assert client.get_versions(subject, deleted=True) == [1, 2]
    assert sr_error(client.get_version, subject, 1).error_code == 40402
    assert client.get_version(subject, 1, deleted=True).version == 1
    assert sr_error(client.delete_version, subject, 1).error_code == 40406
    assert client.delete_version(subject, 1, permanent=True) == 1
    assert client.get_versions(subject, deleted=True) == [2]

    assert client.delete_subject(subject) == [2]
    assert subject not in client.get_subjects()
    assert subject in client.get_subjects(deleted=True)
    assert sr_error(client.get_versions, subject).error_code == 40401
    assert sr_error(client.delete_subject, subject).error_code == 40404
    # registering again continues the version numbers; the schema keeps its id
    client = SchemaRegistryClient({"url": registry.url})  # (the old one cached the id)
    sid = client.register_schema(subject, avro(V2))
    assert client.get_versions(subject) == [3]
    assert client.get_version(subject, 3).schema_id == sid == client.get_version(
        subject, 2, deleted=True).schema_id
    client.delete_subject(subject)
    assert client.delete_subject(subject, permanent=True) == [2, 3]
    assert subject not in client.get_subjects(deleted=True)
    assert sr_error(client.delete_subject, subject).error_code == 40401
    assert client.get_schema(sid)  # ids stay resolvable for data written with them


# ---------------------------------------------------------------------------- persistence
def test_restart_keeps_subjects_ids_and_config(broker):
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    with RegistryServer(broker.bootstrap_servers, topic=topic) as reg:
        c = SchemaRegistryClient({"url": reg.url})
        ids = {f"sub{i}": c.register_schema(f"sub{i}", avro(V1 if i % 2 else V2)) for i in range(6)}
        evolved = c.register_schema("sub0", avro(V2 + [{"name": "z", "type": "int", "default": 0}]))
        c.set_compatibility("sub1", "FULL_TRANSITIVE")
        c.set_compatibility(level="FORWARD")
        c.delete_version("sub2", 1)
        before = {s: c.get_versions(s, deleted=True) for s in c.get_subjects(deleted=True)}
    with RegistryServer(broker.bootstrap_servers, topic=topic) as reg:
        c = SchemaRegistryClient({"url": reg.url})
        assert {s: c.get_versions(s, deleted=True) for s in c.get_subjects(deleted=True)} == before
        assert {s: c.get_version(s, 1, deleted=True).schema_id for s in ids} == ids
        assert "sub2" not in c.get_subjects() and "sub2" in c.get_subjects(deleted=True)
        assert c.get_compatibility("sub1") == "FULL_TRANSITIVE"
        assert c.get_compatibility() == "FORWARD"
        new_id = c.register_schema("fresh", avro([{"name": "q", "type": "int"}]))
        assert new_id == evolved + 1  # ids continue after the restart
        assert c.register_schema("again", avro(V1)) == ids["sub1"]


def test_start_reads_past_the_listed_end_of_batched_records(broker):
    """Records another writer batched together (the embedded broker lists only the first of
    the last batch as the end) are all read at start."""
    from kafkasql_magic.kafka import admin
    from kafkasql_magic.kafka.producer import produce

    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    schema = avro(V1).schema_str
    records = [{"key": json.dumps({"keytype": "SCHEMA", "subject": f"b{i}", "version": 1,
                                   "magic": 1}),
                "value": json.dumps({"subject": f"b{i}", "version": 1, "id": 1,
                                     "schema": schema, "deleted": False})}
               for i in range(50)]
    produce(broker.bootstrap_servers, topic, records, create_partitions=1,
            conf={"linger.ms": 50})
    listed = admin.list_offsets(broker.bootstrap_servers, topic, [0], "latest")[0][0]
    with RegistryServer(broker.bootstrap_servers, topic=topic) as reg:
        c = SchemaRegistryClient({"url": reg.url})
        assert c.get_subjects() == sorted(f"b{i}" for i in range(50))
        assert c.get_subjects_by_schema_id(1) == c.get_subjects()
    assert listed <= 50  # (on the embedded broker: well below 50)


def test_concurrent_registrations_get_consistent_ids(broker):
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    variants = [avro(V1 + [{"name": f"f{i}", "type": "int", "default": i}]) for i in range(5)]
    results, errors = [], []

    def worker(n):
        c = SchemaRegistryClient({"url": reg.url})
        try:
            for i, schema in enumerate(variants):
                results.append((f"shared-{i % 2}", i, c.register_schema(f"shared-{i % 2}", schema)))
                results.append((f"own-{n}", i, c.register_schema(f"own-{n}", schema)))
        except Exception as exc:  # reported below
            errors.append(exc)

    with RegistryServer(broker.bootstrap_servers, topic=topic) as reg:
        c = SchemaRegistryClient({"url": reg.url})
        c.set_compatibility(level="NONE")
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        by_variant = {}
        for _subject, i, sid in results:
            by_variant.setdefault(i, set()).add(sid)
        assert all(len(ids) == 1 for ids in by_variant.values())  # one id per schema
        assert len({next(iter(ids)) for ids in by_variant.values()}) == 5
        for n in range(8):
            assert c.get_versions(f"own-{n}") == [1, 2, 3, 4, 5]
        assert len(c.get_versions("shared-0")) == 3 and len(c.get_versions("shared-1")) == 2
        state = {s: [(v, c.get_version(s, v).schema_id) for v in c.get_versions(s)]
                 for s in c.get_subjects()}
    with RegistryServer(broker.bootstrap_servers, topic=topic) as reg:  # read to the end
        c = SchemaRegistryClient({"url": reg.url})
        assert {s: [(v, c.get_version(s, v).schema_id) for v in c.get_versions(s)]
                for s in c.get_subjects()} == state


class _SharedBroker:
    """The module's broker as a stack component the stack does not stop (a Tansu broker
    takes seconds to stop)."""

    name = "broker"

    def __init__(self, broker):
        self.broker = broker
        self.endpoints = broker.endpoints

    def start(self, upstream=None):
        return self

    def stop(self):
        pass

    def is_running(self):
        return self.broker.is_running()


def test_stack_component_and_stop(broker):
    stack = LocalStack([_SharedBroker(broker),
                        RegistryServer(topic=f"_schemas_{uuid.uuid4().hex[:8]}")])
    with stack:
        url = stack.endpoints["schema.registry.url"]
        assert url.startswith("http://127.0.0.1:")
        assert stack.component("schema-registry").is_running()
        assert SchemaRegistryClient({"url": url}).register_schema("x", avro(V1)) == 1
        conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=5)
        conn.request("GET", "/subjects")  # a keep-alive connection
        resp = conn.getresponse()
        assert json.loads(resp.read()) == ["x"]
    assert not stack.component("schema-registry").is_running()
    with pytest.raises((OSError, http.client.HTTPException)):  # stop closed it too
        conn.request("GET", "/subjects")
        conn.getresponse()
    conn.close()
    with pytest.raises(Exception):
        SchemaRegistryClient({"url": url, "max.retries": 0}).get_subjects()
