"""The AST shared by every dialect: frozen dataclasses that only describe, never do.

Every node carries the line and column (1-based) where it starts in the cell, so the
planner can point at the offending token. Positions do not take part in equality, so
tests can compare trees built by hand with parsed ones. `nodes` holds the base node, types
and expressions; `statements` the statements and their parts.
"""

from .nodes import (Node, Type, Expr, Literal, ColumnRef, Dereference, Subscript, FunctionCall, BinaryOp, UnaryOp, And, Or, Not, IsNull, Like, InList, Between, Case, Cast, StructConstructor, Lambda, children, walk, substitute)
from .statements import (Star, SelectItem, SourceRef, Join, Window, Statement, ColumnDef, Property, CreateSource, Select, Describe, Show, Drop, Print, SetProperty, UnsetProperty, Define, Undefine, Explain, ExplainQuery, InsertValues, InsertSelect, CreateAsSelect, TerminateQuery, SourceFormat, AvroDoc, AvroSchemaOptions, Include, CreateKafkaSource, CreateView, Subscribe)

__all__ = ["Node", "Type", "Expr", "Literal", "ColumnRef", "Dereference", "Subscript", "FunctionCall", "BinaryOp", "UnaryOp", "And", "Or", "Not", "IsNull", "Like", "InList", "Between", "Case", "Cast", "StructConstructor", "Lambda", "children", "walk", "substitute", "Star", "SelectItem", "SourceRef", "Join", "Window", "Statement", "ColumnDef", "Property", "CreateSource", "Select", "Describe", "Show", "Drop", "Print", "SetProperty", "UnsetProperty", "Define", "Undefine", "Explain", "ExplainQuery", "InsertValues", "InsertSelect", "CreateAsSelect", "TerminateQuery", "SourceFormat", "AvroDoc", "AvroSchemaOptions", "Include", "CreateKafkaSource", "CreateView", "Subscribe"]
