"""TLS against a real TLS endpoint: Debian's stunnel in front of an embedded broker (advertising
the TLS port, so every connection a client makes goes through TLS) and in front of the embedded
Schema Registry (HTTPS), with a CA and a server certificate made here by openssl."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest

import kafkasql_magic as ks
from kafkasql_magic.local.broker import broker_binary, free_port, spawn_child
from kafkasql_magic.registry.server import RegistryServer

STUNNEL = shutil.which("stunnel4") or shutil.which("stunnel")
pytestmark = pytest.mark.skipif(STUNNEL is None or shutil.which("openssl") is None,
                                reason="needs Debian's stunnel4 and openssl (sudo apt-get install stunnel4 openssl)")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(folder: Path, name: str) -> Path:
    """A self-signed CA (`name`.pem, `name`.key)."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-days", "2", "-subj", f"/CN={name}", cwd=folder)
    return folder / f"{name}.pem"


def make_cert(folder: Path, name: str, ca: str) -> tuple[Path, Path]:
    """A certificate (`name`.pem, `name`.key) for 127.0.0.1 and localhost, signed by `ca`."""
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", "san.cnf", cwd=folder)
    return folder / f"{name}.pem", folder / f"{name}.key"


def make_expired_cert(folder: Path, name: str, ca: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by `ca` that expired in 2020 (`openssl ca` sets both dates)."""
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (folder / "index.txt").write_text("")
    (folder / "serial.txt").write_text("1000\n")
    (folder / "ca.cnf").write_text("[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nnew_certs_dir = .\n"
                                   "serial = serial.txt\ndefault_md = sha256\npolicy = any\n"
                                   "[any]\ncommonName = supplied\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=folder)
    _openssl("ca", "-batch", "-config", "ca.cnf", "-in", f"{name}.csr", "-out", f"{name}.pem", "-notext",
             "-cert", f"{ca}.pem", "-keyfile", f"{ca}.key", "-extfile", "san.cnf",
             "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", cwd=folder)
    return folder / f"{name}.pem", folder / f"{name}.key"


def wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port} after {timeout:g}s: {log.read_text()[-2000:]}")
            time.sleep(0.05)


class TlsStack:
    """A broker listening in plain text on a port nothing uses directly, advertising stunnel's
    TLS port; the registry's HTTPS port in front of `registry_url`, another in front of
    `secured_registry_url` (a registry that needs basic auth). All ask for a client certificate
    signed by the test's CA (mutual TLS). One more TLS port in front of the broker shows a
    certificate that has expired."""

    def __init__(self, folder: Path, registry_url: str, secured_registry_url: str):
        self.folder = folder
        self.ca = make_ca(folder, "test-ca")
        self.other_ca = make_ca(folder, "other-ca")
        cert, key = make_cert(folder, "server", "test-ca")
        expired, expired_key = make_expired_cert(folder, "expired", "test-ca")
        self.client_cert, self.client_key = make_cert(folder, "client", "test-ca")
        plain, self.tls_port, self.https_port = free_port(), free_port(), free_port()
        self.secured_https_port, self.expired_port = free_port(), free_port()
        self.procs: list[subprocess.Popen] = []
        log = folder / "broker.log"
        self.procs.append(spawn_child(
            [broker_binary(), "broker", "--cluster-id", f"tansu-{uuid.uuid4().hex[:12]}",
             "--listener-url", f"tcp://127.0.0.1:{plain}",
             "--advertised-listener-url", f"tcp://127.0.0.1:{self.tls_port}",
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=open(log, "wb"), stderr=subprocess.STDOUT))
        wait_listening(plain, self.procs[-1], log)
        registry_port = urlparse(registry_url).port
        conf = folder / "stunnel.conf"
        conf.write_text(f"foreground = yes\npid =\ndebug = 4\ncert = {cert}\nkey = {key}\n"
                        f"CAfile = {self.ca}\nverifyChain = yes\nrequireCert = yes\n"
                        f"[kafka]\naccept = 127.0.0.1:{self.tls_port}\nconnect = 127.0.0.1:{plain}\n"
                        f"[registry]\naccept = 127.0.0.1:{self.https_port}\nconnect = 127.0.0.1:{registry_port}\n"
                        f"[secured_registry]\naccept = 127.0.0.1:{self.secured_https_port}\n"
                        f"connect = 127.0.0.1:{urlparse(secured_registry_url).port}\n"
                        f"[kafka_expired]\naccept = 127.0.0.1:{self.expired_port}\nconnect = 127.0.0.1:{plain}\n"
                        f"cert = {expired}\nkey = {expired_key}\n")
        log = folder / "stunnel.log"
        self.procs.append(spawn_child([STUNNEL, str(conf)], stdin=subprocess.DEVNULL, stdout=open(log, "wb"),
                                      stderr=subprocess.STDOUT))
        wait_listening(self.tls_port, self.procs[-1], log)
        wait_listening(self.https_port, self.procs[-1], log)
        wait_listening(self.secured_https_port, self.procs[-1], log)
        wait_listening(self.expired_port, self.procs[-1], log)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.tls_port}"

    @property
    def registry_url(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    @property
    def secured_registry_url(self) -> str:
        return f"https://127.0.0.1:{self.secured_https_port}"

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            proc.wait(10)


#: The user and password of the registry that needs basic auth.
USER, PASSWORD = "alice", "Tls-Pw-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def tls(tmp_path_factory, registry, broker):
    with RegistryServer(broker.bootstrap_servers, topic=f"_schemas_tls_{uuid.uuid4().hex[:6]}",
                        basic_auth={USER: PASSWORD}) as secured:
        stack = TlsStack(tmp_path_factory.mktemp("tls"), registry, secured.url)
        yield stack
        stack.stop()


def tls_config(tls, ca: Path) -> dict:
    client = {"ssl.ca.location": str(ca), "ssl.certificate.location": str(tls.client_cert),
              "ssl.key.location": str(tls.client_key)}
    return {"security.protocol": "SSL", **client, **{f"schema.registry.{k}": v for k, v in client.items()}}


@pytest.fixture
def over_tls(tls, spark, tmp_path):
    s = ks.connect(bootstrap_servers=tls.bootstrap, schema_registry_url=tls.registry_url, spark=spark, timeout=90,
                   state_dir=str(tmp_path / "state"), config=tls_config(tls, tls.ca))
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


def tag() -> str:
    return uuid.uuid4().hex[:8].upper()


def test_a_source_and_a_persistent_query_read_and_write_over_tls(over_tls):
    src = f"TLS_{tag()}"
    over_tls.sql(f"CREATE STREAM {src} (ID INT KEY, T BIGINT, V STRING) WITH (kafka_topic='{src.lower()}', "
                 "value_format='JSON', partitions=1);")
    over_tls.sql(f"INSERT INTO {src} (ID, T, V) VALUES (1, 5, 'a'); INSERT INTO {src} (ID, T, V) VALUES (2, 0, 'b');")
    query = over_tls.sql(f"CREATE STREAM UP_{src} AS SELECT ID, UCASE(V) AS V FROM {src};")
    assert query.wait_for_records(2, 180), query.failure
    df = over_tls.sql(f"SELECT ID, V FROM UP_{src};")  # read back through the TLS listener
    assert sorted(map(tuple, df.values.tolist())) == [(1, "A"), (2, "B")]
    pushed = over_tls.sql(f"SELECT ID, V FROM {src} EMIT CHANGES LIMIT 2;")
    assert sorted(map(tuple, pushed.values.tolist())) == [(1, "a"), (2, "b")]

    # a record of time 0 is written with a Produce request of our own, on PLAINTEXT only:
    # over TLS the query fails saying why, never writing it with another time
    zero = over_tls.sql(f"CREATE STREAM Z_{src} WITH (TIMESTAMP='T') AS SELECT * FROM {src};")
    deadline = time.monotonic() + 180
    while zero.failure is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "security.protocol=SSL" in str(zero.failure) and "only PLAINTEXT" in str(zero.failure)
    over_tls.sql(f"TERMINATE {zero.id};")


def test_avro_through_an_https_registry_and_schema_inference(over_tls):
    src = f"AV_{tag()}"
    over_tls.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING, N DOUBLE) WITH (kafka_topic='{src.lower()}', "
                 "value_format='AVRO', partitions=1);")
    over_tls.sql(f"INSERT INTO {src} (ID, V, N) VALUES (1, 'a', 1.5);")
    over_tls.sql(f"CREATE STREAM I_{src} WITH (kafka_topic='{src.lower()}', value_format='AVRO');")  # inferred
    df = over_tls.sql(f"SELECT * FROM I_{src};")
    assert list(df.columns) == ["V", "N"] and df.values.tolist() == [["a", 1.5]]


def test_a_ca_that_did_not_sign_the_brokers_certificate_is_a_clear_error(tls, spark):
    s = ks.connect(bootstrap_servers=tls.bootstrap, spark=spark, timeout=90, config=tls_config(tls, tls.other_ca))
    started = time.monotonic()
    try:
        with pytest.raises(ks.KStreamError) as info:
            s.sql(f"CREATE STREAM CA_{tag()} (V STRING) WITH (kafka_topic='ca-{tag()}', value_format='JSON', "
                  "partitions=1);")
    finally:
        s.stop()
    assert time.monotonic() - started < 15
    assert tls.bootstrap in str(info.value) and "certificate verify failed" in str(info.value)


def test_a_registry_whose_certificate_the_ca_did_not_sign_is_a_clear_error(tls, spark):
    config = {**tls_config(tls, tls.ca), "schema.registry.ssl.ca.location": str(tls.other_ca)}
    s = ks.connect(bootstrap_servers=tls.bootstrap, schema_registry_url=tls.registry_url, spark=spark, timeout=90,
                   config=config)
    name = f"RG_{tag()}"
    try:
        s.sql(f"CREATE STREAM {name} (ID INT KEY, V STRING) WITH (kafka_topic='{name.lower()}', "
              "value_format='AVRO', partitions=1);")
        started = time.monotonic()
        with pytest.raises(ks.KStreamError) as info:
            s.sql(f"INSERT INTO {name} (ID, V) VALUES (1, 'a');")  # registers the value schema
    finally:
        s.stop()
    assert time.monotonic() - started < 15
    assert tls.registry_url in str(info.value) and "CERTIFICATE_VERIFY_FAILED" in str(info.value), str(info.value)


def test_avro_through_an_https_registry_with_basic_auth_and_a_wrong_password(tls, spark, tmp_path):
    src = f"BA_{tag()}"
    config = {**tls_config(tls, tls.ca), "schema.registry.basic.auth.user.info": f"{USER}:{PASSWORD}"}
    s = ks.connect(bootstrap_servers=tls.bootstrap, schema_registry_url=tls.secured_registry_url, spark=spark,
                   timeout=90, state_dir=str(tmp_path / "state"), config=config)
    try:
        s.sql("SET 'auto.offset.reset'='earliest';")
        s.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{src.lower()}', value_format='AVRO', "
              "partitions=1);")
        s.sql(f"INSERT INTO {src} (ID, V) VALUES (1, 'a');")  # registers the value schema
        s.sql(f"CREATE STREAM I_{src} WITH (kafka_topic='{src.lower()}', value_format='AVRO');")  # inferred
        assert s.sql(f"SELECT * FROM I_{src};").values.tolist() == [["a"]]
    finally:
        s.stop()

    wrong = "Wrong-" + uuid.uuid4().hex[:8]
    config = {**tls_config(tls, tls.ca), "schema.registry.basic.auth.user.info": f"{USER}:{wrong}"}
    s = ks.connect(bootstrap_servers=tls.bootstrap, schema_registry_url=tls.secured_registry_url, spark=spark,
                   timeout=90, config=config)
    started = time.monotonic()
    try:
        with pytest.raises(ks.KStreamError) as info:
            s.sql(f"CREATE STREAM W_{src} WITH (kafka_topic='{src.lower()}', value_format='AVRO');")
    finally:
        s.stop()
    assert time.monotonic() - started < 15
    assert tls.secured_registry_url in str(info.value) and "401" in str(info.value), str(info.value)
    assert wrong not in str(info.value) and PASSWORD not in str(info.value)


def test_a_broker_certificate_that_has_expired_is_a_clear_error(tls, spark):
    bootstrap = f"127.0.0.1:{tls.expired_port}"
    s = ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=90, config=tls_config(tls, tls.ca))
    started = time.monotonic()
    try:
        with pytest.raises(ks.KStreamError) as info:
            s.sql(f"CREATE STREAM EX_{tag()} (V STRING) WITH (kafka_topic='ex-{tag()}', value_format='JSON', "
                  "partitions=1);")
    finally:
        s.stop()
    assert time.monotonic() - started < 15
    assert bootstrap in str(info.value) and "certificate has expired" in str(info.value), str(info.value)
