"""The index's skip list: the files it leaves out and why (too big, binary, generated, holding a secret), kept in
its own table so that `cortex index --status` and the dashboard can say so."""

from __future__ import annotations

from typing import Any

from ..store.database import Database
from ..store.sql import in_filter, scan


class SkipList:
    def __init__(self, db: Database, table: Any) -> None:
        self.db = db
        self.table = table

    def rows(self) -> list[tuple[str, str]]:
        """(path, reason) of every skipped file, sorted."""
        return sorted((r["path"], r["reason"]) for r in scan(self.table))

    def replace(self, skipped: list[tuple[str, str]], scope: set[str] | None, changed: list[str]) -> None:
        """Replace the skip list (all of it after a full pass, the affected paths after a partial one), only when
        it differs: an update that changed nothing makes no commit."""
        rows = sorted(set(skipped))
        if scope is None:
            if rows == self.rows():
                return
            where = "true"
        else:
            affected = sorted({p for p, _ in rows} | set(changed))
            if not affected:
                return
            found = in_filter("path", sorted(affected))
            assert found is not None  # affected is not empty
            where = found
            if rows == sorted((r["path"], r["reason"]) for r in scan(self.table, where)):
                return

        def apply():
            if self.table.count_rows(where if where != "true" else None):
                self.db.delete(self.table, where)
            if rows:
                self.db.add(self.table, [{"path": p, "reason": r} for p, r in rows])

        self.db.write(apply)
