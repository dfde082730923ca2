"""An operator tree as EXPLAIN prints it: one line per node, children indented under their
parent, each line what the node's step does. Pure: no Spark."""

from __future__ import annotations

from typing import Callable

from ...sql import ast
from ...loadgen.counter import counter_of
from ...sql.render_statements import writer_of
from . import nodes as n


def explain_lines(tree: n.Node, dialect="ksql") -> list[str]:
    """The tree's lines, its expressions written in `dialect` (a name or a Dialect)."""
    lines: list[str] = []
    _lines(tree, writer_of(dialect), "", "", lines)
    return lines


def _lines(node: n.Node, render, first: str, rest: str, out: list[str]) -> None:
    out.append(first + LABELS[type(node)](node, render))
    children = node.children
    for i, child in enumerate(children):
        last = i == len(children) - 1
        _lines(child, render, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "), out)


def _scan(node: n.Scan, render) -> str:
    side, source = node.input, node.input.source
    named = f"{side.name}" + (f" AS {side.ref.alias}" if side.ref.alias else "")
    if counter_of(source) is not None:
        return f"Scan {side.kind} {named}: load generator COUNTER"
    return (f"Scan {side.kind} {named}: topic {source.topic}, key {source.key_format.name}, "
            f"value {source.value_format.name}")


def _view(node: n.View, render) -> str:
    side = node.input
    return f"View {side.name}" + (f" AS {side.ref.alias}" if side.ref.alias else "") + f" ({', '.join(side.columns)})"


def _join(word: str) -> Callable[[n.BinaryJoin], str]:
    def label(node: n.BinaryJoin, render) -> str:
        join = node.join
        window = f" WITHIN ({join.within[0]} ms, {join.within[1]} ms)" if join.within else ""
        window += f" GRACE PERIOD {join.grace} ms" if join.grace is not None else ""
        return f"{word}: {join.kind} JOIN{window} ON {render(join.on)}"
    return label


def _chain(word: str) -> Callable[[n.ChainJoin], str]:
    def label(node: n.ChainJoin, render) -> str:
        kinds = ", ".join(f"{j.kind} ON {render(j.on)}" for j in node.joins)
        key = f" ({node.key.replace('_', ' ').lower()})" if isinstance(node, n.TableJoin) else ""
        return f"{word}{key}: {kinds}"
    return label


def _filter(node: n.Filter, render) -> str:
    return f"Filter WHERE {render(node.predicate)}" + (" (a rejected row deletes its key)" if node.deletes else "")


def _shape(node, render) -> str:
    text = f"; key {', '.join(node.keys)}" if node.keys else ""
    text += f"; PARTITION BY {', '.join(render(e) for e in node.partition_by)}" if node.partition_by else ""
    text += f"; ORDER BY {', '.join(render.sort_key(k) for k in node.order_by)}" if node.order_by else ""
    return text


def _project(node: n.Project, render) -> str:
    return f"Project {', '.join(name for name, _ in node.outputs)}{_shape(node, render)}"


def _aggregate(word: str) -> Callable[[n.Aggregate], str]:
    def label(node: n.Aggregate, render) -> str:
        g = node.grouping
        keys = ", ".join(render(k) for k in g.keys) or "(all rows)"
        window = f" WINDOW {_window(g.window)}" if g.window is not None else ""
        calls = ", ".join(render(c) for c in g.calls)
        having = f" HAVING {render(_written(g.having, g))}" if g.having is not None else ""
        return f"{word}: GROUP BY {keys}{window} computing {calls or 'no aggregate'}{having}{_shape(node, render)}"
    return label


def _written(expr: ast.Expr, grouping) -> ast.Expr:
    """An expression over the staged group keys and aggregates, as the statement wrote it."""
    staged = {ast.ColumnRef(f"__g{i}"): key for i, key in enumerate(grouping.keys)}
    staged |= {ast.ColumnRef(f"__agg{i}"): call for i, call in enumerate(grouping.calls)}
    return ast.substitute(expr, staged)


def _window(window: ast.Window) -> str:
    text = f"{window.kind} (SIZE {window.size} ms"
    text += f", ADVANCE BY {window.advance} ms" if window.advance is not None else ""
    text += f", GRACE PERIOD {window.grace} ms" if window.grace is not None else ""
    return text + ")"


def _subscribe(node: n.Subscribe, render) -> str:
    return f"Subscribe: rows as diffs ({node.changes.lower()})"


#: Node type -> its line.
LABELS: dict[type, Callable] = {
    n.Scan: _scan,
    n.View: _view,
    n.StreamStreamJoin: _join("StreamStreamJoin (each side's records per join key)"),
    n.SnapshotJoin: _join("SnapshotJoin"),
    n.LookupJoin: _join("LookupJoin (the table as keyed state)"),
    n.BatchLookupJoin: _join("BatchLookupJoin (the table read for every micro-batch)"),
    n.TableJoin: _chain("TableJoin"),
    n.DiffJoin: _chain("DiffJoin (both inputs as multisets)"),
    n.Filter: _filter,
    n.Project: _project,
    n.Aggregate: _aggregate("Aggregate"),
    n.RecordAggregate: _aggregate("RecordAggregate (a change per input record; groups as keyed state)"),
    n.WindowAggregate: _aggregate("WindowAggregate (open windows as keyed state)"),
    n.RecordWindowAggregate: _aggregate("RecordWindowAggregate (a change per input record; open windows as keyed "
                                        "state)"),
    n.SessionAggregate: _aggregate("SessionAggregate (open sessions as keyed state)"),
    n.RecordSessionAggregate: _aggregate("RecordSessionAggregate (a change per input record; open sessions as "
                                         "keyed state)"),
    n.RetractingAggregate: _aggregate("RetractingAggregate (rows and groups as keyed state)"),
    n.RecordRetractingAggregate: _aggregate("RecordRetractingAggregate (a change per group change; keyed state)"),
    n.BatchRetractingAggregate: _aggregate("BatchRetractingAggregate (the table's rows as state, per micro-batch)"),
    n.Subscribe: _subscribe,
}
