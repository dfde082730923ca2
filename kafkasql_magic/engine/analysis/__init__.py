"""Analysis: a statement, the catalog and a dialect -> an immutable plan. Pure: no Spark."""

from .plan import Grouping, Input, QueryPlan
from .checks import check_insert_kind, check_result_kind
from .select import analyse, check_persistent

__all__ = ["Grouping", "Input", "QueryPlan", "analyse", "check_insert_kind", "check_persistent",
           "check_result_kind"]
