"""The peewee models of `store.schema` describe the tables migrations build."""

from __future__ import annotations

import pytest

from store.db import Store
from store.schema import MODELS


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.table_name)
def test_model_matches_migrated_table(model) -> None:
    with Store(":memory:") as store:
        info = store.query(f"PRAGMA table_info({model._meta.table_name})")
        columns = [row[1] for row in info]
        assert columns == [field.column_name for field in model._meta.sorted_fields]
        nullable = {row[1] for row in info if not row[3]}
        for field in model._meta.sorted_fields:
            if field.primary_key:
                continue
            assert (field.column_name in nullable) == field.null, field.column_name


def test_queries_bind_to_their_store_only() -> None:
    from store.schema import ProjectRow

    with Store(":memory:") as one, Store(":memory:") as two:
        one.run(ProjectRow.insert(id="p", name="one", created_at="2026-01-01T00:00:00+00:00"))
        assert one.rows(ProjectRow.select(ProjectRow.name)) == [("one",)]
        assert two.rows(ProjectRow.select(ProjectRow.name)) == []
