"""DDL parsing and schema evolution (pure Python: no Spark)."""

from __future__ import annotations

from decimal import Decimal

from cdc_jobs.transforms.merge import ColumnDecl, DdlAction, DdlEvent, evolve_columns, order_key, parse_ddl


def test_parse_mysql_and_postgres_column_ddl():
    assert parse_ddl("alter table table_test add col2 varchar(22) null") == [
        DdlAction("add", "col2", type_name="varchar(22)")]
    assert parse_ddl("ALTER TABLE `db`.`t` ADD COLUMN `c` decimal(10,2) unsigned NOT NULL DEFAULT '1.50' "
                     "AFTER `b`, DROP COLUMN old, ADD INDEX ix (c)") == [
        DdlAction("add", "c", type_name="decimal(10,2) unsigned", default="1.50"), DdlAction("drop", "old")]
    assert parse_ddl("ALTER TABLE t RENAME COLUMN a TO b") == [DdlAction("rename", "a", new_name="b")]
    assert parse_ddl("alter table t change `a` `b` bigint") == [
        DdlAction("rename", "a", new_name="b", type_name="bigint")]
    assert parse_ddl("ALTER TABLE t MODIFY COLUMN n bigint unsigned NULL") == [
        DdlAction("modify", "n", type_name="bigint unsigned")]
    assert parse_ddl('ALTER TABLE "s"."t" ALTER COLUMN "n" TYPE numeric(20,4)') == [
        DdlAction("modify", "n", type_name="numeric(20,4)")]
    assert parse_ddl("ALTER TABLE t ADD COLUMN d datetime DEFAULT CURRENT_TIMESTAMP") == [
        DdlAction("add", "d", type_name="datetime")]  # expression default: old rows NULL
    assert parse_ddl("TRUNCATE TABLE `t`") == [DdlAction("truncate")]
    assert parse_ddl(None, "TRUNCATE") == [DdlAction("truncate")]
    assert parse_ddl("CREATE INDEX ix ON t (a)") == []
    assert parse_ddl("ALTER TABLE t ADD PRIMARY KEY (a), COMMENT 'x'") == []


def _ddl(n, sql):
    return DdlEvent(order_key(1, (Decimal(n),), "s", 0, n, 0), "DDL", sql, None, f"h{n}", tuple(parse_ddl(sql)))


def test_schema_evolves_in_order_and_day_by_day_equals_all_at_once():
    k = lambda n: order_key(1, (Decimal(n),), "s", 0, n, 0)  # noqa: E731
    v1 = [ColumnDecl("id", "int"), ColumnDecl("a", "int"), ColumnDecl("b", "varchar(5)")]
    v2 = v1 + [ColumnDecl("c", "decimal(5,1)")]
    v3 = [ColumnDecl("id", "int"), ColumnDecl("a", "bigint"), ColumnDecl("c", "decimal(5,1)")]
    lists = [(k(1), k(9), v1), (k(11), k(19), v2), (k(21), k(30), v3)]
    ddls = [_ddl(10, "alter table t add c decimal(5,1)"), _ddl(20, "alter table t drop b, modify a bigint")]
    cols = evolve_columns([], lists, ddls)
    assert [(c.name, c.type_name) for c in cols] == [("id", "int"), ("a", "bigint"), ("c", "decimal(5,1)")]
    day1 = evolve_columns([], lists[:1], [])
    assert [(c.name, c.type_name) for c in evolve_columns(day1, lists[1:], ddls)] == [
        (c.name, c.type_name) for c in cols]
    renamed = evolve_columns(cols, [], [_ddl(40, "ALTER TABLE t RENAME COLUMN a TO z")])
    assert [c.name for c in renamed] == ["id", "z", "c"]


def test_declarations_that_differ_only_by_unknown_types_are_one():
    """DTS Avro declares a column's type only where the event has a value: many lists of one table that differ
    by missing types need no ordering (their merge is the same in any order); lists that disagree do."""
    from cdc_jobs.commands.merge import _one_declaration

    def decl(types, names=("id", "name", "balance"), pk=("id",)):
        return {"names": list(names), "types": list(types), "jdbc": [None] * len(names), "pk": list(pk),
                "row_id": None}

    rows = [decl(["INTEGER", "CHARACTER", None]), decl(["INTEGER", None, "DECIMAL(12,2)"]), decl([None, None, None])]
    assert _one_declaration(rows) == [("id", "INTEGER", None), ("name", "CHARACTER", None),
                                      ("balance", "DECIMAL(12,2)", None)]
    assert _one_declaration([decl([None, None, None])]) == [("id", None, None), ("name", None, None),
                                                            ("balance", None, None)]
    # A column retyped, a column added, another key: the order of the lists decides, so no shortcut.
    assert _one_declaration(rows + [decl(["BIGINT", None, None])]) is None
    assert _one_declaration(rows + [decl([None] * 4, names=("id", "name", "balance", "email"))]) is None
    assert _one_declaration(rows + [decl([None] * 3, pk=("name",))]) is None
