"""Materialize's FORMAT REGEX: each capture group of the first match is a text column.

Materialize writes patterns in Rust's syntax (`(?P<name>...)`); Spark runs Java's, whose group
names allow no `_`. So the pattern is rewritten with plain numbered groups and the names kept
aside: a named group gives its column its name, an unnamed one `column<n>` (n: the group's
number), as Materialize does. A group that did not take part in the match is NULL, not '' (Spark's
regexp_extract gives '' for both): `took_part` asks Java's regex engine itself, with a marker.

As in Materialize, a record that is not UTF-8 fails to decode, and a record the pattern does
not match has no value: for a value that is Materialize's ENVELOPE NONE error
(`Value not present for message`); a key that does not match is a NULL key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import functions as F

from ..errors import StatementError
from ..sql import ast
from .avro import RECORD_FIELDS  # False: the groups make one record column (INCLUDE KEY AS name)
from .base import Decoded, Field, Format, FormatSpec

NOT_UTF8 = "Decode error: Failed to decode UTF-8"
VALUE_NOT_PRESENT = "Envelope error: Flat: Value not present for message"

# a named group's opening in Rust's syntax (both spellings), not a look-behind (?<= (?<!
_NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])([^>]*)>")


@dataclass(frozen=True)
class RegexPattern:
    """A Materialize regex as Spark runs it: `java` has only numbered groups, `names[i]` is the
    column of group i + 1, which opens at `java[openings[i]]`."""

    source: str
    java: str
    names: tuple[str, ...]
    openings: tuple[int, ...]

    def took_part(self, group: int) -> str:
        """A pattern matching exactly when group `group` (1-based) took part in the first match:
        an empty marker group opened with it must be set, and the atomic group keeps the engine
        from looking for another match in which it would be."""
        at = self.openings[group - 1] + 1
        marked = self.java[:at] + "(?<mzmark>)" + self.java[at:]
        return r"^(?>[\s\S]*?(?:" + marked + r"))\k<mzmark>"


def compile_pattern(pattern: str) -> RegexPattern:
    """Rewrite a Materialize (Rust syntax) pattern for Spark, naming every capture group."""
    java, python, openings = [], [], []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            java.append(pattern[i:i + 2])
            python.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]" or pattern[i + 1:i + 3] == "^]":  # a leading ] is literal
                step = 2 if pattern[i + 1] == "]" else 3
                java.append(pattern[i:i + step])
                python.append(pattern[i:i + step])
                i += step
                continue
        elif ch == "(":
            named = _NAMED_GROUP.match(pattern, i)
            if named:
                openings.append(len("".join(java)))
                java.append("(")
                python.append(f"(?P<{named.group(1)}>")
                i = named.end()
                continue
            if pattern[i + 1:i + 2] != "?":
                openings.append(len("".join(java)))
        java.append(ch)
        python.append(ch)
        i += 1
    try:
        compiled = re.compile("".join(python))
    except re.error as e:
        raise StatementError(f"parsing regex: {e}") from None
    by_number = {number: name for name, number in compiled.groupindex.items()}
    names = tuple(by_number.get(n, f"column{n}") for n in range(1, compiled.groups + 1))
    if len(openings) != compiled.groups:
        raise StatementError(f"parsing regex: unsupported group syntax in {pattern!r}")
    return RegexPattern(pattern, "".join(java), names, tuple(openings))


def regex_fields(pattern: str) -> list[Field]:
    """The text columns a REGEX format gives, in group order."""
    return [Field(name, ast.Type("STRING")) for name in compile_pattern(pattern).names]


def regex_spec(pattern: str) -> FormatSpec:
    return FormatSpec("REGEX", {"REGEX": pattern})


class RegexFormat(Format):
    name = "REGEX"
    supported_types = frozenset({"STRING"})

    def validate(self, fields, role, kind):
        if not (len(fields) == 1 and fields[0].type.name == "STRUCT"):  # the groups as one record
            super().validate(fields, role, kind)

    def decode(self, raw, fields, spec, role):
        if spec.options.get(RECORD_FIELDS) is False:
            groups = self._decode(raw, regex_fields(spec.options["REGEX"]), spec, role)
            return Decoded([F.struct(*groups.columns).alias(fields[0].name)], groups.error)
        return self._decode(raw, fields, spec, role)

    def _decode(self, raw, fields, spec, role):
        compiled = compile_pattern(spec.options["REGEX"])
        text = raw.cast("string")
        utf8 = F.is_valid_utf8(text)
        matched = raw.isNotNull() & utf8 & text.rlike(compiled.java)
        columns = []
        for f in fields:
            group = compiled.names.index(f.name) + 1
            took_part = text.rlike(compiled.took_part(group))
            columns.append(F.when(matched & took_part,
                                  F.regexp_extract(text, compiled.java, group)).alias(f.name))
        bad_bytes = raw.isNotNull() & ~utf8
        error = F.when(bad_bytes, F.concat(F.lit(NOT_UTF8 + ' (original bytes: "'), F.lower(F.hex(raw)),
                                           F.lit('")')))
        if role == "value":
            error = error.when(raw.isNotNull() & ~matched, F.lit(VALUE_NOT_PRESENT))
        return Decoded(columns, error)

    def encode(self, values, fields, spec, role):
        raise StatementError("FORMAT REGEX can only be read, not written.")
