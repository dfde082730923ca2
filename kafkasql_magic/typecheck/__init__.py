"""Type-check expressions before Spark sees them, with ksqlDB's rules and messages.

Input: an AST expression, the visible columns (name -> ksql type; `QUALIFIER.NAME` keys for
the columns of joined sources) and the dialect. Output: the expression's ksql type (None for
a bare NULL), or an `ExpressionTypeError` that names the problem and points at it. No Spark:
a user's mistake must never surface as a Spark, py4j or Python error.

`check_select` checks a whole SELECT: every projection, WHERE, GROUP BY, HAVING, join ON and
PARTITION BY expression, with the clause rules (WHERE, HAVING and ON must be BOOLEAN);
`check_type` checks a declared type (DECIMAL precision and scale). Modules: `signatures` (the
function table), `rules` (comparison, CAST and arithmetic tables), `messages` (each dialect's
wording), `checker` (the walk).
"""

from __future__ import annotations

from ..errors import ExpressionTypeError
from .checker import Checker, SelectTypes, check_expression, check_select, check_type

__all__ = ["Checker", "ExpressionTypeError", "SelectTypes", "check_expression", "check_select", "check_type"]
