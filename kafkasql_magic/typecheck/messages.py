"""How each dialect words a type error: ksqlDB's messages, and Materialize's (PostgreSQL's).

The type checker decides what is wrong; these classes word it, and hold the two rules the
dialects differ on: Materialize lets `x = NULL` through and refuses `text + text`, as PostgreSQL
does; ksqlDB refuses the first and concatenates with the second.
"""

from __future__ import annotations

from typing import Sequence

from ..sql import ast
from ..sql.typetext import display

#: Comparison operator -> ksqlDB's name for it in messages.
COMPARISONS = {"=": "EQUAL", "<>": "NOT_EQUAL", "<": "LESS_THAN", "<=": "LESS_THAN_OR_EQUAL",
               ">": "GREATER_THAN", ">=": "GREATER_THAN_OR_EQUAL"}

#: ksqlDB's name for each operand type in "Unsupported arithmetic types." (its base type).
BASE_NAMES = {"INT": "INTEGER"}


def _base(t: ast.Type | None) -> str:
    return "null" if t is None else BASE_NAMES.get(t.name, t.name)


class Messages:
    """ksqlDB's wording."""

    null_comparison_allowed = False
    plus_concatenates_strings = True
    extra_casts: dict[str, tuple[str, ...]] = {}  # source type -> CAST targets beyond ksqlDB's
    casts_anything_to_text = False
    #: `'{1,2}'::int list`: a quoted literal cast to a list or map is read as its text form
    reads_collection_text = False

    def type_name(self, t: ast.Type | None) -> str:
        return "null" if t is None else display(t)

    def not_boolean(self, clause: str, expression: str, t: ast.Type) -> str:
        return f"Type error in {clause} expression: Should evaluate to boolean but is {expression} " \
               f"({display(t)}) instead."

    #: Where an unknown or ambiguous column is, as ksqlDB's analyzer says it (errors.PlacedError).
    column_location = "analyzer"

    def unknown_column(self, name: str, clause: str | None = None) -> str:
        """ksqlDB's UnknownColumnException: the clause the column is in opens the message."""
        if clause == "PARTITION BY":
            return (f"PARTITION BY column '{name}' cannot be resolved. '{name}' must be a column in the source "
                    "schema since PARTITION BY is applied on the input.")
        return f"{clause} column '{name}' cannot be resolved." if clause else f"Column '{name}' cannot be resolved."

    def ambiguous_column(self, name: str, candidates: Sequence[str]) -> str:
        """ksqlDB's AmbiguousColumnException: the candidates sorted, the last joined by `or`."""
        ordered = sorted(candidates)
        joined = ordered[0] if len(ordered) == 1 else f"{', '.join(ordered[:-1])} or {ordered[-1]}"
        return f"Column '{name}' is ambiguous. Could be {joined}."

    def unknown_function(self, name: str, args: Sequence[ast.Type | None]) -> str:
        return f"Can't find any functions with the name '{name}'"

    def no_overload(self, name: str, args: Sequence[ast.Type | None], overloads) -> str:
        given = ", ".join(self.type_name(a) for a in args)
        alternatives = "\n".join(o.text for o in overloads)
        return f"Function '{name}' does not accept parameters ({given}).\nValid alternatives are:\n{alternatives}"

    def empty_array(self, has_args: bool) -> str:
        if has_args:
            return ("Cannot construct an array with all NULL elements "
                    "(see https://github.com/confluentinc/ksql/issues/4239). As a workaround, you may "
                    "cast a NULL value to the desired type.")
        return ("Array constructor cannot be empty. Please supply at least one element "
                "(see https://github.com/confluentinc/ksql/issues/4239).")

    def null_arithmetic(self, expression: str, op: str, left, right) -> str:
        return f"Error processing expression: {expression}. Arithmetic on types {self.type_name(left)} " \
               f"and {self.type_name(right)} are not supported."

    def bad_operands(self, expression: str, op: str, left: ast.Type, right: ast.Type) -> str:
        return f"Error processing expression: {expression}. Unsupported arithmetic types. " \
               f"{_base(left)} {_base(right)}"

    def bad_sign(self, expression: str, op: str, operand: ast.Type) -> str:
        return f"Error processing expression: {expression}. Unsupported arithmetic types. {_base(operand)}"

    def null_comparison(self, left, op: str, right) -> str:
        return f"Comparison with NULL not supported: {_base(left).upper()} {op} {_base(right).upper()}\n" \
               "Use 'IS NULL' or 'IS NOT NULL' instead."

    def not_comparable(self, left_text: str, op: str, right_text: str, left, right) -> str:
        return f"Cannot compare {left_text} to {right_text} with {COMPARISONS[op]}."

    def not_logical(self, operator: str, expression: str, found) -> str:
        if operator == "NOT":
            return f"Not expression expects a boolean value.  Actual {self.type_name(found[0])}"
        return f"Logical binary expects two boolean values.  Actual {self.type_name(found[0])} " \
               f"and {self.type_name(found[1])}"

    def not_string(self, operator: str, operand: str) -> str:
        return f"Type error in {operator} expression: {operand} is not a STRING."

    def bad_decimal(self, problem: str, t: ast.Type) -> str:
        return f"DECIMAL {problem}: DECIMAL({t.precision},{t.scale})"

    def bad_cast(self, source: ast.Type, target: ast.Type) -> str:
        return f"Cast of {display(source)} to {display(target)} is not supported"


#: ksql type -> PostgreSQL's name, as Materialize shows it.
PG_NAMES = {"INT": "integer", "BIGINT": "bigint", "DOUBLE": "double precision", "DECIMAL": "numeric",
            "STRING": "text", "BOOLEAN": "boolean", "BYTES": "bytea", "DATE": "date", "TIME": "time",
            "TIMESTAMP": "timestamp", "STRUCT": "record"}


class MaterializeMessages(Messages):
    """Materialize's wording (PostgreSQL's type names: text, integer, numeric, ...)."""

    null_comparison_allowed = True
    plus_concatenates_strings = False
    extra_casts = {"BOOLEAN": ("INT", "BIGINT"), "INT": ("BOOLEAN",), "BIGINT": ("BOOLEAN",),
                   "STRUCT": ("STRUCT",)}  # a record to a record type (ROW(1, 2)::point): by position
    #: Every type has a text form in PostgreSQL (`bytea::text` is `\x6d65...`).
    casts_anything_to_text = True
    reads_collection_text = True

    def type_name(self, t: ast.Type | None) -> str:
        if t is None:
            return "unknown"
        if t.name == "ARRAY":
            return f"{self.type_name(t.element)} list"
        if t.name == "MAP":
            return f"map[{self.type_name(t.key)}=>{self.type_name(t.value)}]"
        return PG_NAMES[t.name]

    def not_boolean(self, clause: str, expression: str, t: ast.Type) -> str:
        return f"{clause} clause must have type boolean, not type {self.type_name(t)}"

    column_location = "parser"

    def unknown_column(self, name: str, clause: str | None = None) -> str:
        return f'column "{name}" does not exist'

    def ambiguous_column(self, name: str, candidates: Sequence[str]) -> str:
        return f'column reference "{name.lower()}" is ambiguous'

    def unknown_function(self, name: str, args: Sequence[ast.Type | None]) -> str:
        return self.no_overload(name, args, ())

    def no_overload(self, name: str, args, overloads) -> str:
        return f"function {name.lower()}({', '.join(self.type_name(a) for a in args)}) does not exist"

    def empty_array(self, has_args: bool) -> str:
        return "cannot determine type of empty array" if not has_args else \
            "cannot determine the type of an array of NULLs: cast one element"

    def null_arithmetic(self, expression: str, op: str, left, right) -> str:
        return self.bad_operands(expression, op, left, right)

    def bad_operands(self, expression: str, op: str, left, right) -> str:
        return f"operator does not exist: {self.type_name(left)} {op} {self.type_name(right)}"

    def bad_sign(self, expression: str, op: str, operand: ast.Type) -> str:
        return f"operator does not exist: {op}{self.type_name(operand)}"

    def not_comparable(self, left_text: str, op: str, right_text: str, left, right) -> str:
        return self.bad_operands("", op, left, right)

    def not_logical(self, operator: str, expression: str, found) -> str:
        bad = next(t for t in found if t is not None and t.name != "BOOLEAN")
        return f"{operator} argument must have type boolean, not type {self.type_name(bad)}"

    def not_string(self, operator: str, operand: str) -> str:
        return f"{operator} needs text: {operand}"

    def bad_cast(self, source: ast.Type, target: ast.Type) -> str:
        return f"CAST does not support casting from {self.type_name(source)} to {self.type_name(target)}"

    def bad_collection_text(self, t: ast.Type, detail: str, text: str) -> str:
        return f'{self.collection_text_prefix(t)}{detail}: "{text}"'

    def collection_text_prefix(self, t: ast.Type) -> str:
        return f"invalid input syntax for type {self.type_name(t)}: "

    def bad_decimal(self, problem: str, t: ast.Type) -> str:
        if "scale" in problem:
            return f"scale for type numeric must be between 0 and precision {t.precision}"
        return "precision for type numeric must be between 1 and 38, inclusive"


MESSAGES: dict[str, Messages] = {"ksql": Messages(), "materialize": MaterializeMessages()}
