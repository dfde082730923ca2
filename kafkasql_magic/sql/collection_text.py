"""Materialize's text form of lists, maps and records, as a quoted literal cast to one is read:
`'{1,2}'::int list`, `'{{1},{2,3}}'::int list list`, `'{a=>1,b=>2}'::map[text=>int]`,
`'(1,"x y")'::point`, `'{"(1,2)","(3,)"}'::point list`.

The type drives the reading: a list's or map's element that is itself a list or map is
written in braces, any other element is a scalar's text (unquoted and trimmed, or in double
quotes with `\\` escaping the next character; unquoted `NULL` is NULL) handed to `scalar`
with its type. A record is its fields in parentheses, as PostgreSQL reads them: an unquoted
field runs to the next comma or parenthesis untrimmed, an empty one is NULL, and a field or
element holding a record, list or map is that one's text (quoted where it has commas). Malformed
text raises ValueError.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from .ast import Type

Scalar = Callable[[str, Type], Any]


_INT_RANGES = {"INT": range(-(2**31), 2**31), "BIGINT": range(-(2**63), 2**63)}
_BOOLEAN_WORDS = {"t": True, "true": True, "yes": True, "on": True, "1": True,
                  "f": False, "false": False, "no": False, "off": False, "0": False}


#: PostgreSQL's names of the types whose words are read here, for the messages
_PG_NAMES = {"INT": "integer", "BIGINT": "bigint", "DOUBLE": "double precision", "DECIMAL": "numeric",
             "BOOLEAN": "boolean"}


def typed_word(word: str, type_: Type):
    """A scalar element's text as its Python value where the type is a number, a boolean or
    text (ValueError in Materialize's words when it is not one); other types keep their
    text, for Spark's cast."""
    name, text = type_.name, word.strip()
    try:
        if name in _INT_RANGES:
            if not text.lstrip("+-").isdigit():
                raise ValueError("invalid digit found in string")
            if int(text) not in _INT_RANGES[name]:
                raise ValueError("number too large to fit in target type")
            return int(text)
        if name == "DOUBLE":
            return float(text)
        if name == "DECIMAL":
            return Decimal(text)
        if name == "BOOLEAN":
            return _BOOLEAN_WORDS[text.lower()]
    except (ValueError, InvalidOperation, KeyError) as exc:
        detail = f"{exc}: " if isinstance(exc, ValueError) and name in _INT_RANGES else ""
        raise ValueError(f'invalid input syntax for type {_PG_NAMES[name]}: {detail}"{word}"') from None
    return word


#: the types read from a text form here
TEXT_FORMS = ("ARRAY", "MAP", "STRUCT")


def parse(text: str, type_: Type, scalar: Scalar):
    """The value of `text` for `type_` (an ARRAY, MAP or STRUCT Type; a record's value is a
    dict of its fields' values by name)."""
    reader = _Reader(text, scalar)
    if type_.name == "STRUCT":
        value = reader.record(type_)
        if reader.rest().strip():
            raise ValueError("junk after right parenthesis")
        return value
    value = reader.collection(type_)
    if reader.rest().strip():
        raise ValueError("junk after closing right brace")
    return value


class _Reader:
    def __init__(self, text: str, scalar: Scalar):
        self.text, self.at, self.scalar = text, 0, scalar

    def rest(self) -> str:
        return self.text[self.at:]

    def skip(self) -> str:
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1
        if self.at >= len(self.text):
            raise ValueError("unexpected end of input")
        return self.text[self.at]

    def expect(self, word: str) -> None:
        self.skip()
        if not self.text.startswith(word, self.at):
            raise ValueError(f'expected "{word}"')
        self.at += len(word)

    def collection(self, type_: Type):
        self.expect("{")
        found: Any = [] if type_.name == "ARRAY" else {}
        if self.skip() == "}":
            self.at += 1
            return found
        while True:
            if type_.name == "ARRAY":
                found.append(self.element(type_.element))
            else:
                key = self.word(stops=",}=")
                if key is None:
                    raise ValueError("a map key cannot be NULL")
                self.expect("=>")
                found[key] = self.element(type_.value)
            char = self.skip()
            self.at += 1
            if char == "}":
                return found
            if char != ",":
                raise ValueError(f'unexpected "{char}" character')

    def record(self, type_: Type) -> dict:
        if self.skip() != "(":
            raise ValueError("missing left parenthesis")
        self.at += 1
        values = {}
        for number, (name, field_type) in enumerate(type_.fields):
            if number:
                if self.at >= len(self.text):
                    raise ValueError("unexpected end of input")
                if self.text[self.at] != ",":
                    raise ValueError("too few columns")
                self.at += 1
            values[name] = self.field(field_type)
        if self.at >= len(self.text) or self.text[self.at] != ")":
            raise ValueError("too many columns" if self.rest().startswith(",") else "unexpected end of input")
        self.at += 1
        return values

    def field(self, type_: Type):
        if self.at < len(self.text) and self.text[self.at] == '"':
            word = self.quoted(doubled=True)
        else:
            start = self.at
            while self.at < len(self.text) and self.text[self.at] not in ",)":
                self.at += 1
            word = self.text[start:self.at]
            if not word:
                return None
        return parse(word, type_, self.scalar) if type_.name in TEXT_FORMS else self.scalar(word, type_)

    def element(self, type_: Type):
        if type_.name in ("ARRAY", "MAP") and self.skip() == "{":
            return self.collection(type_)
        word = self.word(stops=",}")
        if word is None:
            return None
        return parse(word, type_, self.scalar) if type_.name == "STRUCT" else self.scalar(word, type_)

    def quoted(self, doubled: bool = False) -> str:
        """A double-quoted word from its opening quote, `\\` escaping the next character (and,
        in a record's field, `""` standing for one quote)."""
        out = []
        self.at += 1
        while self.at < len(self.text):
            char = self.text[self.at]
            if (char == "\\" or (doubled and self.text.startswith('""', self.at))) and self.at + 1 < len(self.text):
                out.append(self.text[self.at + 1])
                self.at += 2
            elif char == '"':
                self.at += 1
                return "".join(out)
            else:
                out.append(char)
                self.at += 1
        raise ValueError("unexpected end of input")

    def word(self, stops: str) -> str | None:
        """A quoted or unquoted word (None: unquoted NULL)."""
        if self.skip() == '"':
            return self.quoted()
        start = self.at
        while self.at < len(self.text) and self.text[self.at] not in stops:
            if self.text[self.at] in '{"\\':
                raise ValueError(f'unexpected "{self.text[self.at]}" character')
            self.at += 1
        word = self.text[start:self.at].strip()
        if not word:
            raise ValueError("empty element")
        return None if word.upper() == "NULL" else word
