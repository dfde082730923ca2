"""logical_frame's recipes (engine.decode.rows_spark): built once per source and read columns, rebuilt
when anything of the source differs (format options too, which FormatSpec's equality ignores)
or when the JVM that built them is gone."""

from dataclasses import replace

from pyspark import SparkContext

from kafkasql_magic.catalog import KEY, Column, SourceDef
from kafkasql_magic.engine.decode.rows_spark import _Recipes
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.sql import ast

READ = ("key", "value", "partition", "offset")


def _source(**value_options) -> SourceDef:
    return SourceDef("STREAM", "S", "t", FormatSpec("KAFKA"), FormatSpec("JSON", dict(value_options)),
                     (Column("K", ast.Type("STRING"), KEY), Column("V", ast.Type("BIGINT"))))


def _counting():
    built = []

    def build(source, read):
        built.append((source, frozenset(read)))
        return object()

    return built, _Recipes(build, size=2)


def test_a_recipe_is_built_once_per_source_and_read():
    built, recipes = _counting()
    first = recipes.get(_source(), READ)
    assert recipes.get(_source(), READ) is first
    assert len(built) == 1 and built[0][1] == frozenset(READ)
    assert recipes.get(_source(), READ + ("timestamp",)) is not first
    assert len(built) == 2


def test_format_options_and_every_field_tell_sources_apart():
    built, recipes = _counting()
    plain = recipes.get(_source(), READ)
    assert _source() == _source(WRAP_SINGLE_VALUE="false")  # why the key is not the source itself
    assert recipes.get(_source(WRAP_SINGLE_VALUE="false"), READ) is not plain
    assert recipes.get(replace(_source(), envelope="UPSERT"), READ) is not plain
    assert len(built) == 3


def test_the_oldest_recipe_goes_first_and_a_new_jvm_clears_them(monkeypatch):
    built, recipes = _counting()
    one, two = recipes.get(_source(A="1"), READ), recipes.get(_source(A="2"), READ)
    recipes.get(_source(A="1"), READ)  # used again: now the newest
    recipes.get(_source(A="3"), READ)  # over the size: the least recently used (A=2) goes
    assert recipes.get(_source(A="1"), READ) is one
    assert recipes.get(_source(A="2"), READ) is not two
    count = len(built)
    monkeypatch.setattr(SparkContext, "_gateway", object())
    assert recipes.get(_source(A="1"), READ) is not one
    assert len(built) == count + 1


def test_changed_client_settings_rebuild_a_recipe():
    """An AVRO or PROTOBUF decoding UDF holds its registry's client properties, as they were."""
    from kafkasql_magic import clientconf

    built, recipes = _counting()
    first = recipes.get(_source(), READ)
    clientconf.configure(None, "http://registry.invalid:8081", {"schema.registry.basic.auth.user.info": "u:p"})
    try:
        assert recipes.get(_source(), READ) is not first
        assert len(built) == 2
    finally:
        clientconf.forget(None, "http://registry.invalid:8081", ["schema.registry.basic.auth.user.info"])
