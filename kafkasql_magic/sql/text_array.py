"""PostgreSQL's one-dimensional text array literal (`'{a,b,"c d",0}'`) → its elements, as
the path of jsonb's `#>` / `#>>` is written. Unquoted elements are trimmed and `NULL` is a
NULL element; double quotes keep spaces, commas and braces, with `\\` escaping the next
character. Malformed text raises `MalformedArray`, worded as Materialize words it."""

from __future__ import annotations


class MalformedArray(ValueError):
    """Materialize's message: `invalid input syntax for type array: <detail>: "<text>"`."""

    def __init__(self, detail: str, text: str):
        quoted = text.replace('"', '\\"')
        super().__init__(f'invalid input syntax for type array: malformed array literal: {detail}: "{quoted}"')


def parse(text: str) -> tuple[str | None, ...]:
    """The elements of `text`, a literal such as `{a,0}`; `{}` has none."""
    body = text.strip()
    if not body.startswith("{"):
        raise MalformedArray("missing opening left brace", text)
    elements: list[str | None] = []
    at = 1
    while True:
        at = _skip_spaces(body, at)
        if at >= len(body):
            raise MalformedArray("unexpected end of input", text)
        if body[at] == "}" and not elements:
            at += 1
            break
        element, at = (_quoted if body[at] == '"' else _unquoted)(body, at, text)
        elements.append(element)
        at = _skip_spaces(body, at)
        if at >= len(body):
            raise MalformedArray("unexpected end of input", text)
        if body[at] == "}":
            at += 1
            break
        if body[at] != ",":
            raise _unexpected(body[at], text)
        at += 1
    if body[at:].strip():
        raise MalformedArray("junk after closing right brace", text)
    return tuple(elements)


def _skip_spaces(body: str, at: int) -> int:
    while at < len(body) and body[at].isspace():
        at += 1
    return at


def _quoted(body: str, at: int, text: str) -> tuple[str, int]:
    out = []
    at += 1
    while at < len(body):
        char = body[at]
        if char == "\\" and at + 1 < len(body):
            out.append(body[at + 1])
            at += 2
        elif char == '"':
            return "".join(out), at + 1
        else:
            out.append(char)
            at += 1
    raise MalformedArray("unexpected end of input", text)


def _unquoted(body: str, at: int, text: str) -> tuple[str | None, int]:
    start = at
    while at < len(body) and body[at] not in ",}":
        if body[at] in '{"\\':
            raise _unexpected(body[at], text)
        at += 1
    element = body[start:at].strip()
    if not element:
        raise _unexpected(body[at], text) if at < len(body) else MalformedArray("unexpected end of input", text)
    return (None if element.upper() == "NULL" else element), at


def _unexpected(char: str, text: str) -> MalformedArray:
    return MalformedArray(f'unexpected "{char}" character', text)
