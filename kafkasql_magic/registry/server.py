"""A Confluent-compatible Schema Registry over HTTP, for the embedded stack.

    with RegistryServer("127.0.0.1:9092") as reg:
        SchemaRegistryClient({"url": reg.url})

State lives in the compacted topic `_schemas` on the broker (see `log.py`), so a new server on
the same broker serves the same subjects and ids. It speaks the REST API that
`confluent_kafka.schema_registry` uses: subjects and versions (soft and permanent deletes),
schemas by id, lookup, compatibility config and checks, and `GET /`, `/schemas/types`,
`/mode`, `/contexts`. As an embedded-stack component it also has `start(upstream)`, `name`,
`endpoints` and `is_running()` (see `kafkasql_magic.local.stack`).
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.registry import schemas
from kafkasql_magic.registry.log import SchemaLog
from kafkasql_magic.registry.store import RegistryError, Store

LOG = logging.getLogger("kafkasql_magic.registry")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
IDLE_TIMEOUT = 60.0  # seconds a keep-alive connection may stay idle


def _flag(query: dict, name: str) -> bool:
    return query.get(name, ["false"])[-1].strip().lower() == "true"


def _one(query: dict, name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _page(items: list, query: dict) -> list:
    """`offset` and `limit` (negative: no limit) query parameters, as Confluent pages lists."""
    try:
        offset = max(int(_one(query, "offset") or 0), 0)
        limit = int(_one(query, "limit") or -1)
    except ValueError:
        return items
    items = items[offset:]
    return items if limit < 0 else items[:limit]


def _schema_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RegistryError(404, 40403, f"Schema {text} not found") from None


# Routes: (method, path pattern over unquoted segments, handler(store, match, query, body)).
# `{}` in a pattern is one path segment.
def _routes():
    def r(method, pattern, fn):
        rx = "^" + re.escape(pattern).replace(r"\{\}", "([^/]*)") + "$"
        return method, re.compile(rx), fn

    return [
        r("GET", "", lambda s, m, q, b: {}),
        r("GET", "schemas/types", lambda s, m, q, b: list(schemas.TYPES)),
        r("GET", "schemas/ids/{}", lambda s, m, q, b: s.schema_by_id(_schema_id(m[0]))),
        r("GET", "schemas/ids/{}/schema",
          lambda s, m, q, b: _Raw(s.schema_by_id(_schema_id(m[0]))["schema"])),
        r("GET", "schemas/ids/{}/subjects",
          lambda s, m, q, b: _page(sorted({x["subject"] for x in s.versions_of_id(
              _schema_id(m[0]), deleted=_flag(q, "deleted"))}), q)),
        r("GET", "schemas/ids/{}/versions", lambda s, m, q, b: _page(
            s.versions_of_id(_schema_id(m[0]), deleted=_flag(q, "deleted")), q)),
        r("GET", "subjects", lambda s, m, q, b: _page(s.subjects(
            prefix=_one(q, "subjectPrefix"), deleted=_flag(q, "deleted"),
            deleted_only=_flag(q, "deleted_only")), q)),
        r("POST", "subjects/{}", lambda s, m, q, b: s.lookup(
            m[0], b, deleted=_flag(q, "deleted"), normalize=_flag(q, "normalize"))),
        r("DELETE", "subjects/{}",
          lambda s, m, q, b: s.delete_subject(m[0], permanent=_flag(q, "permanent"))),
        r("GET", "subjects/{}/versions", lambda s, m, q, b: _page(s.versions(
            m[0], deleted=_flag(q, "deleted"), deleted_only=_flag(q, "deleted_only")), q)),
        r("POST", "subjects/{}/versions",
          lambda s, m, q, b: s.register(m[0], b, normalize=_flag(q, "normalize"))),
        r("GET", "subjects/{}/versions/{}",
          lambda s, m, q, b: s.version(m[0], m[1], deleted=_flag(q, "deleted"))),
        r("GET", "subjects/{}/versions/{}/schema", lambda s, m, q, b: _Raw(
            s.version(m[0], m[1], deleted=_flag(q, "deleted"))["schema"])),
        r("GET", "subjects/{}/versions/{}/referencedby",
          lambda s, m, q, b: _page(s.referenced_by(m[0], m[1]), q)),
        r("DELETE", "subjects/{}/versions/{}", lambda s, m, q, b: s.delete_version(
            m[0], m[1], permanent=_flag(q, "permanent"))),
        r("GET", "subjects/{}/metadata", lambda s, m, q, b: s.latest_with_metadata(
            m[0], dict(zip(q.get("key", []), q.get("value", []))), deleted=_flag(q, "deleted"))),
        r("POST", "compatibility/subjects/{}/versions/{}", lambda s, m, q, b: s.test_compatibility(
            m[0], m[1], b, verbose=_flag(q, "verbose"), normalize=_flag(q, "normalize"))),
        r("POST", "compatibility/subjects/{}/versions", lambda s, m, q, b: s.test_compatibility(
            m[0], None, b, verbose=_flag(q, "verbose"), normalize=_flag(q, "normalize"))),
        r("GET", "config", lambda s, m, q, b: s.get_config(None)),
        r("PUT", "config", lambda s, m, q, b: s.set_config(None, b)),
        r("DELETE", "config", lambda s, m, q, b: s.delete_config(None)),
        r("GET", "config/{}", lambda s, m, q, b: s.get_config(
            m[0], default_to_global=_flag(q, "defaultToGlobal"))),
        r("PUT", "config/{}", lambda s, m, q, b: s.set_config(m[0], b)),
        r("DELETE", "config/{}", lambda s, m, q, b: s.delete_config(m[0])),
        r("GET", "mode", lambda s, m, q, b: {"mode": "READWRITE"}),
        r("GET", "mode/{}", lambda s, m, q, b: {"mode": "READWRITE"}),
        r("GET", "contexts", lambda s, m, q, b: ["."]),
    ]


ROUTES = _routes()


class _Raw(str):
    """A response body sent as is (the `/schema` endpoints serve the schema text itself)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the registry client reuses connections
    server_version = "kafkasql-registry"
    timeout = IDLE_TIMEOUT
    disable_nagle_algorithm = True  # else each reply waits for the client's delayed ACK

    def setup(self):
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.connections.discard(self.connection)

    def log_message(self, fmt, *args):  # quiet: debug logging only
        LOG.debug("%s - %s", self.address_string(), fmt % args)

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        if not self._authorized():
            self.close_connection = True  # its body, if any, is left unread
            self._send(401, {"error_code": 401, "message": "Unauthorized"},
                       {"WWW-Authenticate": 'Basic realm="kafkasql-registry"'})
            return
        try:
            status, payload = 200, self._route(method)
        except RegistryError as exc:
            status, payload = exc.status, {"error_code": exc.code, "message": exc.message}
        except KafkaError as exc:
            LOG.warning("Schema registry storage error: %s", exc)
            status, payload = 500, {"error_code": 50001,
                                    "message": f"Error in the backend data store - {exc}"}
        except Exception as exc:  # a bug: answer, log the traceback
            LOG.exception("Schema registry request %s %s failed", method, self.path)
            status, payload = 500, {"error_code": 50001, "message": f"Internal error: {exc}"}
        self._send(status, payload)

    def _authorized(self) -> bool:
        """True without basic auth, or with the Authorization header of one of its users."""
        users = self.server.users
        if not users:
            return True
        header = self.headers.get("Authorization") or ""
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(encoded.strip()).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        expected = users.get(user)
        return expected is not None and hmac.compare_digest(expected, password)

    def _route(self, method: str):
        parts = urlsplit(self.path)
        segments = [unquote(seg) for seg in parts.path.strip("/").split("/")]
        # Match on the raw segments joined with "/" so a subject may contain an encoded "/".
        query = parse_qs(parts.query, keep_blank_values=True)
        body = self._read_body()
        allowed = False
        for verb, rx, fn in ROUTES:
            match = self._match(rx, segments)
            if match is None:
                continue
            if verb != method:
                allowed = True
                continue
            return fn(self.server.store, match, query, body)
        if allowed:
            raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")
        raise RegistryError(404, 404, "HTTP 404 Not Found")

    @staticmethod
    def _match(rx, segments):
        # Patterns use "/" between segments; segments themselves may contain "/" (encoded in
        # the URL), so substitute a character that cannot appear in a pattern first.
        safe = [seg.replace("/", "\x00") for seg in segments]
        m = rx.match("/".join(safe) if safe != [""] else "")
        if m is None:
            return None
        return [g.replace("\x00", "/") for g in m.groups()]

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise RegistryError(400, 400, f"Unrecognized request body: {exc}") from None

    def _send(self, status: int, payload, headers: dict | None = None) -> None:
        if isinstance(payload, _Raw):
            data = str(payload).encode()
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, store: Store, users: dict[str, str] | None = None):
        self.store = store
        self.users = dict(users or {})
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)


class RegistryServer:
    """The embedded Schema Registry on `host`:`port` (a free port when 0), storing its state
    in `topic` on `bootstrap_servers` (from the upstream endpoints when None).

    `start()` returns once the state is rebuilt from the topic and the port serves; `stop()`
    closes the port and every open connection. `basic_auth` ({user: password}, opt-in) makes
    every request need HTTP basic auth as one of those users, as a secured registry does.
    """

    name = "schema-registry"

    def __init__(self, bootstrap_servers: str | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, topic: str = "_schemas", conf: dict | None = None,
                 timeout: float = 30.0, basic_auth: dict[str, str] | None = None):
        self.basic_auth = dict(basic_auth or {})
        self.bootstrap_servers = bootstrap_servers
        self._from_upstream = bootstrap_servers is None  # follow the broker across restarts
        self.host = host
        self.port = port
        self._fixed_port = bool(port)
        self.topic = topic
        self.conf = dict(conf or {})
        self.timeout = timeout
        self.store: Store | None = None
        self._log: SchemaLog | None = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        if not self.port:
            raise KafkaError("The embedded schema registry is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def endpoints(self) -> dict[str, str]:
        return {"schema.registry.url": self.url}

    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, upstream: dict | None = None) -> "RegistryServer":
        with self._lock:
            if self.is_running():
                return self
            if self._from_upstream:
                self.bootstrap_servers = (upstream or {}).get("bootstrap.servers")
                if not self.bootstrap_servers:
                    raise KafkaError("The embedded schema registry needs bootstrap.servers")
            log = SchemaLog(self.bootstrap_servers, self.topic, conf=self.conf,
                            timeout=self.timeout)
            store = Store(log.append)
            try:
                store.load(log.open())
                httpd = self._bind(store)
            except BaseException as exc:
                log.close()
                if isinstance(exc, OSError):
                    raise KafkaError(f"The embedded schema registry cannot listen on "
                                     f"{self.host}:{self.port}: {exc}") from exc
                raise
            self.port = httpd.server_address[1]
            self.store, self._log, self._httpd = store, log, httpd
            self._thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                name=f"schema-registry-{self.port}", daemon=True)
            self._thread.start()
            return self

    def _bind(self, store: Store) -> _HTTPServer:
        try:
            return _HTTPServer((self.host, self.port), store, self.basic_auth)
        except OSError:
            if self._fixed_port or not self.port:
                raise
            return _HTTPServer((self.host, 0), store, self.basic_auth)  # the last port is taken: any will do

    def stop(self) -> None:
        with self._lock:
            httpd, self._httpd = self._httpd, None
            thread, self._thread = self._thread, None
            log, self._log = self._log, None
            if httpd is not None:
                httpd.shutdown()
                httpd.server_close()
                for conn in list(httpd.connections):  # idle keep-alive connections
                    try:
                        conn.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            if thread is not None:
                thread.join(5)
            if log is not None:
                with self.store.lock:  # let a write in progress finish
                    log.close()

    def __enter__(self) -> "RegistryServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.url}" if self.is_running() else "stopped"
        return f"<RegistryServer {state} topic={self.topic!r}>"
