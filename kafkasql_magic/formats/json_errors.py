"""Why a text is not JSON, in the words of the Rust parser Materialize decodes JSON with
(serde_json): `expected value at line 1 column 6`, `key must be a string at line 1 column 2`,
`EOF while parsing an object at line 1 column 8`, `trailing characters at line 1 column 4`.
Pure Python, no Spark: it runs on the executors, for the records that failed only.

The line and column are serde_json's: where the parser stood when it gave up, counted in bytes
from the start of the line (1-based), or one past it when it gave up on the byte it peeked at.
`decode_error_text` is Materialize's DecodeError text around it: the message, then the record's
`original text` (when it is UTF-8) and `original bytes` (hex).
"""

from __future__ import annotations

_WHITESPACE = b" \n\t\r"
_ESCAPES = b'"\\/bfnrt'
_HEX = b"0123456789abcdefABCDEF"
_DIGITS = b"0123456789"


class _Stop(Exception):
    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.message, self.index = message, index


class _Parser:
    def __init__(self, data: bytes):
        self.data, self.i = data, 0

    # serde_json's two positions: after the bytes consumed, or after the byte peeked at
    def error(self, message: str):
        raise _Stop(message, self.i)

    def peek_error(self, message: str):
        raise _Stop(message, min(len(self.data), self.i + 1))

    def peek(self) -> int | None:
        return self.data[self.i] if self.i < len(self.data) else None

    def next(self) -> int | None:
        c = self.peek()
        if c is not None:
            self.i += 1
        return c

    def whitespace(self) -> int | None:
        while self.i < len(self.data) and self.data[self.i] in _WHITESPACE:
            self.i += 1
        return self.peek()

    def document(self) -> None:
        self.value()
        if self.whitespace() is not None:
            self.peek_error("trailing characters")

    def value(self) -> None:
        c = self.whitespace()
        if c is None:
            self.peek_error("EOF while parsing a value")
        if c in b"ntf":
            self.i += 1
            self.ident({ord("n"): b"ull", ord("t"): b"rue", ord("f"): b"alse"}[c])
        elif c == ord("-"):
            self.i += 1
            self.number()
        elif c in _DIGITS:
            self.number()
        elif c == ord('"'):
            self.i += 1
            self.string()
        elif c == ord("["):
            self.i += 1
            self.sequence()
        elif c == ord("{"):
            self.i += 1
            self.mapping()
        else:
            self.peek_error("expected value")

    def ident(self, rest: bytes) -> None:
        for expected in rest:
            c = self.next()
            if c is None:
                self.error("EOF while parsing a value")
            if c != expected:
                self.error("expected ident")

    def number(self) -> None:
        c = self.next()
        if c is None:
            self.error("EOF while parsing a value")
        if c == ord("0"):
            if self.peek() is not None and self.peek() in _DIGITS:
                self.peek_error("invalid number")
        elif c not in _DIGITS:
            self.error("invalid number")
        else:
            while self.peek() is not None and self.peek() in _DIGITS:
                self.i += 1
        if self.peek() == ord("."):
            self.i += 1
            if self.peek() is None:
                self.peek_error("EOF while parsing a value")
            if self.peek() not in _DIGITS:
                self.peek_error("invalid number")
            while self.peek() is not None and self.peek() in _DIGITS:
                self.i += 1
        if self.peek() in (ord("e"), ord("E")):
            self.i += 1
            if self.peek() in (ord("+"), ord("-")):
                self.i += 1
            c = self.next()
            if c is None:
                self.error("EOF while parsing a value")
            if c not in _DIGITS:
                self.error("invalid number")
            while self.peek() is not None and self.peek() in _DIGITS:
                self.i += 1

    def string(self) -> None:
        start = self.i
        while True:
            c = self.next()
            if c is None:
                self.error("EOF while parsing a string")
            if c == ord('"'):
                break
            if c < 0x20:
                self.error("control character (\\u0000-\\u001F) found while parsing a string")
            if c == ord("\\"):
                e = self.next()
                if e is None:
                    self.error("EOF while parsing a string")
                if e == ord("u"):
                    digits = self.data[self.i:self.i + 4]
                    if len(digits) < 4:
                        self.i = len(self.data)
                        self.error("EOF while parsing a string")
                    self.i += 4
                    if any(d not in _HEX for d in digits):
                        self.error("invalid escape")
                elif e not in _ESCAPES:
                    self.error("invalid escape")
        try:
            self.data[start:self.i - 1].decode("utf-8")
        except UnicodeDecodeError:
            self.error("invalid unicode code point")

    def sequence(self) -> None:
        self.members(ord("]"), "list", self.value)

    def mapping(self) -> None:
        self.members(ord("}"), "object", self.member)

    def member(self) -> None:
        """One `"key": value` of an object (at its first character)."""
        if self.whitespace() != ord('"'):
            self.peek_error("key must be a string")
        self.i += 1
        self.string()
        c = self.whitespace()
        if c is None:
            self.peek_error("EOF while parsing an object")
        if c != ord(":"):
            self.peek_error("expected `:`")
        self.i += 1
        self.value()

    def members(self, close: int, kind: str, item) -> None:
        """A list's or an object's items up to `close`, with serde_json's messages for what is
        missing between them."""
        first = True
        while True:
            c = self.whitespace()
            if c == close:
                self.i += 1
                return
            if c == ord(",") and not first:
                self.i += 1
                c = self.whitespace()
            elif c is None:
                self.peek_error(f"EOF while parsing a{'n' if kind == 'object' else ''} {kind}")
            elif not first:
                self.peek_error(f"expected `,` or `{chr(close)}`")
            first = False
            if c == close:
                self.peek_error("trailing comma")
            if c is None:
                self.peek_error("EOF while parsing a value")
            item()


def json_error(data: bytes) -> str | None:
    """serde_json's message for `data`, with its line and column; None when it is JSON."""
    try:
        _Parser(data).document()
    except _Stop as stop:
        line_start = data.rfind(b"\n", 0, stop.index) + 1
        line = 1 + data.count(b"\n", 0, line_start)
        return f"{stop.message} at line {line} column {stop.index - line_start}"
    return None


def decode_error_text(message: str, raw: bytes) -> str:
    """Materialize's DecodeError text: the message, the record as text when it is UTF-8 (NUL
    shown as NULL), and its bytes in hex."""
    try:
        text = raw.decode("utf-8").replace("\0", "NULL")
    except UnicodeDecodeError:
        return f'{message} (original bytes: "{raw.hex()}")'
    return f'{message} (original text: {text}, original bytes: "{raw.hex()}")'


def json_decode_error(raw: bytes) -> str | None:
    """`Failed to decode JSON: ...` for a record that is not JSON, else None."""
    reason = json_error(raw)
    return None if reason is None else decode_error_text(f"Failed to decode JSON: {reason}", raw)
