"""A finite result (a `LIMIT` query, a snapshot, DESCRIBE, EXPLAIN, SHOW, the processing log) as
the notebook shows it: the live widget's table (`render.py`), with the whole text of every value.

Only the display: the DataFrame stays what `Session.sql` returned (`.frame`; `-o NAME` and
`NAME <<` bind it). No index column; long values wrap, never cut; NULL has one spelling
(`render.NULL`) whatever pandas made of it; a line counts the rows.
"""

from __future__ import annotations

import html
import math
import textwrap

import pandas as pd

from .render import boxed, cell_text, html_table

#: rows a result shows; past them the count line says how many more the DataFrame holds
SHOWN_ROWS = 1000
#: characters per line of a long value in the text form (the HTML form wraps to the page)
TEXT_WIDTH = 60


def count_line(rows: int, shown: int) -> str:
    line = f"{rows:,} row{'' if rows == 1 else 's'}"
    if shown < rows:
        line += f" (the first {shown:,} shown; the DataFrame holds them all: bind it with -o NAME)"
    return line


def _wrapped(text: str) -> str:
    """A value's text over lines of at most TEXT_WIDTH characters: its own line breaks kept (a
    statement's lines stay lines), a long line broken between words where it can be; nothing left out."""
    return "\n".join(piece for line in text.split("\n")
                     for piece in (textwrap.wrap(line, TEXT_WIDTH, break_on_hyphens=False) or [line]))


def _sql_value(value):
    """A DataFrame cell as the SQL value it stands for: pandas spells a missing value `NaN`,
    `<NA>` or `NaT` by column type (a NULL in a DOUBLE column is NaN), the display spells it NULL."""
    if value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


class ResultTable:
    """The display of a pandas DataFrame of results: `_repr_html_` for the notebook, `repr` for
    a terminal (a boxed table, as ksqlDB's CLI draws one)."""

    def __init__(self, frame, shown_rows: int = SHOWN_ROWS):
        self.frame = frame
        self.shown_rows = shown_rows

    def _rows(self) -> list[tuple]:
        shown = self.frame.iloc[: self.shown_rows]
        return list(zip(*([_sql_value(v) for v in shown.iloc[:, i].tolist()] for i in range(shown.shape[1]))))

    def _count(self) -> str:
        return count_line(len(self.frame), min(len(self.frame), self.shown_rows))

    def _repr_html_(self) -> str:
        table = html_table(list(self.frame.columns), self._rows(), cell_text, css_class="kstream-result", wrap=True)
        return (f'<div style="max-height:40em;overflow:auto">{table}</div>'
                f'<div class="kstream-count" style="color:#616161;font-size:12px">{html.escape(self._count())}</div>')

    def __repr__(self) -> str:
        cells = [[_wrapped(cell_text(v)) for v in row] for row in self._rows()]
        return boxed([str(c) for c in self.frame.columns], cells) + "\n" + self._count()


class ResultFrame(pd.DataFrame):
    """What a `%%kstream` cell returns for a finite result: still the pandas DataFrame (so
    `x = %kstream SELECT ...` and `_` work as they always did), shown as a `ResultTable`.
    Anything computed from it is a plain DataFrame."""

    @property
    def _constructor(self):
        return pd.DataFrame

    def _repr_html_(self) -> str:
        return ResultTable(self)._repr_html_()

    def __repr__(self) -> str:
        return repr(ResultTable(self))


def result_frame(frame: pd.DataFrame) -> ResultFrame:
    """`frame` as a cell returns it: the same data and `attrs` (PRINT's detected formats)."""
    shown = ResultFrame(frame)
    shown.attrs.update(frame.attrs)
    return shown
