"""Materialize's texts for a JSON record that does not decode (serde_json's messages, with
their line and column, then the record's text and bytes)."""

from __future__ import annotations

import pytest

from kafkasql_magic.formats.json_errors import json_decode_error, json_error


@pytest.mark.parametrize("text, message", [
    (b'{"a":}', "expected value at line 1 column 6"),
    (b"not json", "expected ident at line 1 column 2"),
    (b"{bad", "key must be a string at line 1 column 2"),
    (b"[1,]", "trailing comma at line 1 column 4"),
    (b'{"a":1', "EOF while parsing an object at line 1 column 6"),
    (b"1 2", "trailing characters at line 1 column 3"),
    (b"", "EOF while parsing a value at line 1 column 0"),
    (b'"ab', "EOF while parsing a string at line 1 column 3"),
    (b'{"a" 1}', "expected `:` at line 1 column 6"),
    (b"[1 2]", "expected `,` or `]` at line 1 column 4"),
    (b"01", "invalid number at line 1 column 2"),
    (b'{\n  "a": tru\n}', "expected ident at line 3 column 0"),  # the newline read is the mismatch
    (b'{\n  "a": x}', "expected value at line 2 column 8"),
])
def test_serde_json_messages(text, message):
    assert json_error(text) == message


def test_json_documents_have_no_error():
    for text in (b'{"a": [1, 2.5e3, -0.1, "x\\u00e9"], "b": {"c": null}}', b" true ", b'"s"'):
        assert json_error(text) is None


def test_the_decode_error_shows_the_original_text_and_bytes():
    assert json_decode_error(b'{"a":}') == ('Failed to decode JSON: expected value at line 1 column 6 '
                                            '(original text: {"a":}, original bytes: "7b2261223a7d")')
    assert json_decode_error(b"\xff") == 'Failed to decode JSON: expected value at line 1 column 1 (original bytes: "ff")'
    assert json_decode_error(b"[1]") is None
