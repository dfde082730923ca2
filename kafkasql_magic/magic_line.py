"""Splitting a `%kstream` / `%%kstream` line into options, an assignment target and SQL.

argparse reads `--` as the start of an option, SQL as the start of a comment. Knowing the
option list settles it (ipython-sql's idea): a `--` word that is not one of our options starts a
comment that runs to the end of the line. The first word that is not an option starts the SQL
(the line magic's statement), which is kept as typed, quotes and spacing included. `NAME <<`
before the SQL binds the result to NAME, as in ipython-sql and JupySQL.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

# A word: quoted parts kept together, so `--file 'my file.sql'` is one option value.
_WORD = re.compile(r"""(?:"[^"]*"|'[^']*'|[^\s'"])+|["']""")
_TARGET = re.compile(r"\s*([A-Za-z_]\w*)\s*<<\s*")
_NUMBER = re.compile(r"-\d")


class LineError(ValueError):
    """The magic line cannot be read (an unknown option, a missing value)."""


@dataclass(frozen=True)
class MagicLine:
    options: list[str]  # words for argparse, quotes still on
    target: str | None  # NAME of `NAME <<`
    sql: str  # the rest of the line, as typed


def _option_arity(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Every option string of `parser` -> whether it takes a value."""
    return {name: action.nargs != 0 for action in parser._actions for name in action.option_strings}


def split_line(line: str, parser: argparse.ArgumentParser) -> MagicLine:
    known = _option_arity(parser)
    words = list(_WORD.finditer(line))
    options: list[str] = []
    i = 0
    sql_start = len(line)
    while i < len(words):
        word = words[i].group()
        name = word.split("=", 1)[0]
        if name in known:
            options.append(word)
            if known[name] and "=" not in word:
                if i + 1 >= len(words):
                    raise LineError(f"option {name} needs a value")
                options.append(words[i + 1].group())
                i += 1
            i += 1
            continue
        if word.startswith("--"):  # a SQL comment: the rest of the line is not read
            return MagicLine(options, None, "")
        if word.startswith("-") and len(word) > 1 and not _NUMBER.match(word):
            raise LineError(f"unknown option {word}; options are {', '.join(sorted(known))}")
        sql_start = words[i].start()
        break
    sql = line[sql_start:]
    target = None
    match = _TARGET.match(sql)
    if match:
        target, sql = match.group(1), sql[match.end():]
    return MagicLine(options, target, sql.strip())
