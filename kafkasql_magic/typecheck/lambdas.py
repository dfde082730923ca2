"""ksqlDB's lambda functions (TRANSFORM, FILTER, REDUCE over arrays and maps), as a table.

An overload is chosen as ksqlDB chooses it: by the collection's kind and by how many
parameters each lambda argument has. The lambda's parameters are typed from the collection
(its elements; a map's key and value) and, for REDUCE, from the initial state, which comes
first: `(state, element)`, `(state, key, value)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sql import ast
from .rules import BOOLEAN
from .signatures import widen

#: What a lambda argument is, in "does not accept parameters (...)" (ksqlDB's SqlLambda).
LAMBDA = ast.Type("LAMBDA")
STATE = "STATE"  # an argument that is REDUCE's initial state


@dataclass(frozen=True)
class Overload:
    """`text` is how "Valid alternatives are:" lists it; `arguments` says, per argument, the
    collection kind (ARRAY, MAP), STATE, or the number of parameters of a lambda there."""

    text: str
    arguments: tuple[str | int, ...]

    @property
    def collection(self) -> str:
        return self.arguments[0]


OVERLOADS: dict[str, tuple[Overload, ...]] = {
    "TRANSFORM": (
        Overload("TRANSFORM(ARRAY<T> array, LAMBDA (T) => R function)", ("ARRAY", 1)),
        Overload("TRANSFORM(MAP<K, V> map, LAMBDA (K, V) => R keyFunction, LAMBDA (K, V) => S valueFunction)",
                 ("MAP", 2, 2)),
    ),
    "FILTER": (
        Overload("FILTER(ARRAY<T> array, LAMBDA (T) => BOOLEAN function)", ("ARRAY", 1)),
        Overload("FILTER(MAP<K, V> map, LAMBDA (K, V) => BOOLEAN function)", ("MAP", 2)),
    ),
    "REDUCE": (
        Overload("REDUCE(ARRAY<T> array, S initialState, LAMBDA (S, T) => S function)", ("ARRAY", STATE, 2)),
        Overload("REDUCE(MAP<K, V> map, S initialState, LAMBDA (S, K, V) => S function)", ("MAP", STATE, 3)),
    ),
}


def is_lambda_function(name: str) -> bool:
    return name in OVERLOADS


def choose(name: str, args: list[ast.Expr], collection: ast.Type | None) -> Overload | None:
    """The overload whose collection kind and lambda arities fit `args` (None: none does)."""
    for overload in OVERLOADS[name]:
        if len(args) != len(overload.arguments):
            continue
        if collection is not None and collection.name != overload.collection:
            continue
        if all(isinstance(a, ast.Lambda) == isinstance(want, int) and
               (not isinstance(want, int) or len(a.params) == want)
               for a, want in zip(args[1:], overload.arguments[1:])):
            return overload
    return None


def parameter_types(collection: ast.Type | None, state: ast.Type | None = None,
                    reduces: bool = False) -> tuple[ast.Type | None, ...]:
    """The types a lambda's parameters get: an element, or a key and a value; REDUCE's state first."""
    if collection is None:
        items: tuple = (None, None)
    elif collection.name == "ARRAY":
        items = (collection.element,)
    else:
        items = (collection.key, collection.value)
    return ((state,) if reduces else ()) + items


def result_type(name: str, collection: ast.Type | None, state: ast.Type | None,
                results: list[ast.Type | None]) -> ast.Type | None | bool:
    """The call's type from its lambdas' result types; False when a lambda's result does not
    fit (FILTER's must be BOOLEAN, REDUCE's must fit the initial state's type)."""
    if name == "FILTER":
        return collection if results[0] in (None, BOOLEAN) else False
    if name == "REDUCE":
        if state is None:
            return None
        return state if results[0] is None or widen(state, results[0]) == state else False
    if collection is None:
        return None
    if collection.name == "ARRAY":
        return ast.Type("ARRAY", element=results[0])
    return ast.Type("MAP", key=results[0], value=results[1])


# ---------------------------------------------------------------- typing (the checker's part)
def type_call(checker, e: ast.FunctionCall) -> ast.Type | None:
    """TRANSFORM, FILTER, REDUCE: the overload by collection kind and lambda arities, then each
    lambda typed with its parameters typed from the collection (and REDUCE's initial state).
    A lambda whose result does not fit is shown as ksqlDB shows it: LAMBDA (INTEGER) => INTEGER."""
    values = [None if isinstance(a, ast.Lambda) else checker.type_of(a) for a in e.args]
    collection = values[0] if values else None
    overload = choose(e.name, list(e.args), collection)
    if overload is None:
        raise checker.error(e, checker.messages.no_overload(e.name, [checker.argument(a) for a in e.args],
                                                            OVERLOADS[e.name]))
    reduces = STATE in overload.arguments
    state = values[1] if reduces else None
    shown, results = [], []
    for arg, value in zip(e.args, values):
        if not isinstance(arg, ast.Lambda):
            shown.append(value)
            continue
        params = parameter_types(collection, state, reduces) if collection is not None \
            else (state,) * reduces + (None,) * (len(arg.params) - reduces)
        results.append(type_lambda(checker, arg, params))
        names = ", ".join(checker.messages.type_name(t) for t in params)
        shown.append(ast.Type(f"LAMBDA ({names}) => {checker.messages.type_name(results[-1])}"))
    result = result_type(e.name, collection, state, results)
    if result is False:
        raise checker.error(e, checker.messages.no_overload(e.name, shown, OVERLOADS[e.name]))
    return result


def type_lambda(checker, lam: ast.Lambda, params: tuple) -> ast.Type | None:
    """The type of a lambda's body with its parameters typed as `params`, after ksqlDB's rules
    on parameter names."""
    if len(set(lam.params)) < len(lam.params):
        raise checker.error(lam, f"Lambda arguments have duplicates: [{', '.join(lam.params)}]")
    for name in lam.params:
        if name in checker.lambda_vars:
            raise checker.error(lam, "Reusing lambda arguments in nested lambda is not allowed")
        if checker.names_column(name):
            raise checker.error(lam, f"Lambda function argument can't be a column name: {name}")
    outer = checker.lambda_vars
    checker.lambda_vars = {**outer, **dict(zip(lam.params, params))}
    try:
        return checker.type_of(lam.body)
    finally:
        checker.lambda_vars = outer
