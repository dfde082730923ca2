"""A query as a tree of operators: typed, frozen nodes (`nodes.py`) made from a plan by one
planner (`planner.py`), printed by EXPLAIN (`explain.py`) and turned into Spark frames by the
build step, which dispatches on a node's type through tables (`engine.build.query_spark`'s
`ROWS`, `JOINS`, `RESULTS`)."""

from .explain import explain_lines
from .nodes import Node
from .planner import tree_of

__all__ = ["Node", "explain_lines", "tree_of"]
