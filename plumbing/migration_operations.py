"""Migration operations that work on both databases rootcause runs on.

`AddIndexConcurrently` builds an index with PostgreSQL's `CREATE INDEX CONCURRENTLY`, so that
submissions and workers go on writing the table while it builds (a plain `CREATE INDEX` blocks
writes for as long as it scans a long history); Django's own operation of that name is
PostgreSQL-only, and the embedded mode's SQLite, which has no concurrent writers to spare, gets a
plain `CREATE INDEX`. A migration using it sets `atomic = False`, as PostgreSQL requires, and holds
nothing else (a failed concurrent build leaves an invalid index, which a rerun drops and rebuilds).
"""

from __future__ import annotations

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations import AddIndex
from django.db.migrations.state import ProjectState


class AddIndexConcurrently(PostgresAddIndexConcurrently):
    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            self._drop_invalid(app_label, schema_editor, to_state)
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)

    def _drop_invalid(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, to_state: ProjectState
    ) -> None:
        """A concurrent build that failed (or was interrupted) leaves the index behind, marked
        invalid: dropped here so that running the migration again builds it."""
        model = to_state.apps.get_model(app_label, self.model_name)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE c.relname = %s AND i.indrelid = %s::regclass AND NOT i.indisvalid",
                [self.index.name, model._meta.db_table],
            )
            if cursor.fetchone():
                schema_editor.execute(
                    f"DROP INDEX CONCURRENTLY IF EXISTS {schema_editor.quote_name(self.index.name)}"
                )
