"""Statement handlers: statement type -> handler(session, statement, text, timeout).

The session only dispatches through `HANDLERS`; each handler module does one kind of work."""

from __future__ import annotations

from ..sql import ast
from ..sql import ast_materialize as mz_ast
from ..sql import ast_tables
from . import comments, connections, constants, custom_types, inspect, properties, queries, sinks, sources, tables, writes

HANDLERS = {
    ast.CreateSource: sources.create_source,
    ast.CreateKafkaSource: sources.create_kafka_source,
    ast.CreateView: constants.reading(sources.create_view),
    ast.Drop: sources.drop,
    ast.Select: constants.reading(queries.select),
    ast.Subscribe: constants.reading(queries.subscribe),
    ast.Explain: queries.explain,
    ast.Describe: inspect.describe,
    ast.Show: inspect.show,
    ast.Print: inspect.print_topic,
    ast.SetProperty: properties.set_property,
    ast.UnsetProperty: properties.unset_property,
    ast.Define: properties.define,
    ast.Undefine: properties.undefine,
    ast.TerminateQuery: properties.terminate,
    ast.InsertValues: writes.insert_values,
    ast.InsertSelect: writes.insert_select,
    ast.CreateAsSelect: writes.create_as_select,
    ast.ExplainQuery: writes.explain_query,
    mz_ast.CreateSink: sinks.create_sink,
    mz_ast.DropSink: sinks.drop_sink,
    mz_ast.ShowCreateSink: sinks.show_create_sink,
    mz_ast.CreateSecret: connections.create_secret,
    mz_ast.CreateConnection: connections.create_connection,
    mz_ast.CreateSourceTable: sources.create_source_table,
    mz_ast.CreateLoadGenerator: sources.create_load_generator,
    ast_tables.CreateTable: tables.create_table,
    ast_tables.InsertRows: tables.insert_rows,
    ast_tables.Update: tables.update_rows,
    ast_tables.Delete: tables.delete_rows,
    ast_tables.CreateValuesView: constants.create_values_view,
    mz_ast.CreateType: custom_types.create_type,
    mz_ast.CommentOn: comments.comment_on,
}

__all__ = ["HANDLERS"]
