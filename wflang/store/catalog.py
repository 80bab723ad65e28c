"""Deployed workflow versions: registering compiled tables and reading them back.

A table is registered once per (name, version); the same content again is no
change, different content under the same version is refused. Tables are kept
decoded per process by their hash (``Catalog``): a hash names one content, so
the cache is never stale.
"""

from __future__ import annotations

from collections.abc import Mapping

from wflang.runtime.ir import Value
from wflang.runtime.table import (
    FirstEntry,
    Table,
    WaitEntry,
    dumps,
    loads,
    same_behaviour,
    table_hash,
)
from wflang.runtime.validate import taken
from wflang.runtime.versions import MAX_VERSION
from wflang.runtime.waiting import Wait
from wflang.store import rows
from wflang.store.backend import Tx, placeholders
from wflang.store.records import (
    Deployed,
    StoreError,
    UnknownWorkflow,
    VersionConflict,
    VersionInfo,
)
from wflang.store.status import FINISHED


class Catalog:
    """The deployed tables this process has read, by hash, and what they declare."""

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._message_waits: dict[str, bool] = {}  # table hash -> has a message wait

    def prepare(self, table: Table) -> tuple[str, str]:
        """A table's stored text and hash, once its version is known to be in range."""
        if not 1 <= table.version <= MAX_VERSION:  # the language's bound, in every store
            raise StoreError(
                f"{table.workflow} version {table.version} is out of range: "
                f"a version is 1 to {MAX_VERSION}"
            )
        return dumps(table), table_hash(table)

    def keep(self, digest: str, table: Table) -> None:
        """Remember a table registered by a transaction that committed."""
        self._tables[digest] = table

    def cached(self, digest: str) -> Table | None:
        """The table with this hash if this process has read it (no query)."""
        return self._tables.get(digest)

    def read(self) -> dict[str, Table]:
        """The tables this process has read, by hash."""
        return dict(self._tables)

    def table_for(self, tx: Tx, digest: str) -> Table:
        table = self._tables.get(digest)
        if table is None:
            found = tx.query("SELECT table_json FROM wf_workflow WHERE hash = ?", (digest,))
            if not found:
                raise UnknownWorkflow(f"no deployed table with hash {digest}")
            table = self._tables[digest] = loads(rows.text(found[0][0]))
        return table

    def message_taken(
        self, tx: Tx, digest: str, message: str, payload: Mapping[str, Value]
    ) -> dict[str, Value] | None:
        """The payload as this version declares the message (its time text read), or
        None when it does not fit that declaration."""
        return taken(self.table_for(tx, digest), message, payload)

    def waits_for_messages(self, digest: str, table: Table) -> bool:
        """Whether this table has a message wait, a boundary message or a ``first`` with a
        message arm (only then are subscriptions kept)."""
        found = self._message_waits.get(digest)
        if found is None:
            found = self._message_waits[digest] = any(
                (isinstance(s.entry, WaitEntry) and s.entry.trigger == Wait.MESSAGE)
                or any(c.kind == Wait.MESSAGE for c in getattr(s.entry, "catches", ()))
                or (
                    isinstance(s.entry, FirstEntry)
                    and any(arm.trigger == Wait.MESSAGE for arm in s.entry.arms)
                )
                for s in table.states
            )
        return found

    def deployed(self, tx: Tx, name: str, version: int | None) -> Deployed:
        columns = "SELECT name, version, hash, table_json, deployed_at FROM wf_workflow "
        if version is None:
            found = tx.query(columns + "WHERE name = ? ORDER BY version DESC LIMIT 1", (name,))
        else:
            found = tx.query(columns + "WHERE name = ? AND version = ?", (name, version))
        if not found:
            known = [rows.text(r[0]) for r in tx.query("SELECT DISTINCT name FROM wf_workflow")]
            if version is not None and name in known:
                raise UnknownWorkflow(f"workflow '{name}' has no deployed version {version}")
            raise UnknownWorkflow(
                f"no deployed workflow '{name}'"
                + (f" (deployed: {', '.join(sorted(known))})" if known else "")
                + "; deploy it with `wf deploy FILE`"
            )
        n, v, h, text, at = found[0]
        digest = rows.text(h)
        table = self._tables.get(digest) or loads(rows.text(text))
        self._tables[digest] = table
        return Deployed(rows.text(n), rows.integer(v), digest, table, rows.integer(at))


def register(
    tx: Tx,
    table: Table,
    source_file: str | None,
    text: str,
    digest: str,
    now: int,
    source_text: str | None = None,
) -> bool:
    """Register a compiled version; False when exactly it (or the same behaviour, only its
    comments or layout changed) is already there."""
    found = tx.query(
        "SELECT hash, table_json FROM wf_workflow WHERE name = ? AND version = ?",
        (table.workflow, table.version),
    )
    if found:
        old_hash, old_text = (rows.text(x) for x in found[0])
        if old_hash == digest or same_behaviour(loads(old_text), table):
            return False
        raise VersionConflict(
            f"{table.workflow} version {table.version} is already deployed with "
            f"different content (hash {old_hash[:12]}, this one "
            f"{digest[:12]}): give the changed workflow a new version number"
        )
    other = tx.query("SELECT name, version FROM wf_workflow WHERE hash = ?", (digest,))
    if other:
        other_name, other_version = other[0]
        raise VersionConflict(
            f"this table is already deployed as {other_name} version {other_version}"
        )
    tx.execute(
        "INSERT INTO wf_workflow (name, version, hash, table_json, source_file, "
        "deployed_at, source_text) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (table.workflow, table.version, digest, text, source_file, now, source_text),
    )
    return True


def source(tx: Tx, digest: str) -> tuple[str | None, str | None]:
    """The file a deployed version was compiled from and its text as deployed (each
    None when not known)."""
    found = tx.query("SELECT source_file, source_text FROM wf_workflow WHERE hash = ?", (digest,))
    if not found:
        raise UnknownWorkflow(f"no deployed table with hash {digest}")
    return rows.maybe_text(found[0][0]), rows.maybe_text(found[0][1])


def names(tx: Tx) -> list[str]:
    """The name of every deployed workflow, in order."""
    return [
        rows.text(n) for (n,) in tx.query("SELECT DISTINCT name FROM wf_workflow ORDER BY name")
    ]


def hashes(tx: Tx) -> list[str]:
    """The hash of every deployed table, in order."""
    return [rows.text(h) for (h,) in tx.query("SELECT hash FROM wf_workflow ORDER BY hash")]


def versions(tx: Tx, name: str | None) -> list[VersionInfo]:
    """Every deployed version (of ``name``, or all) with its running and finished
    instance counts."""
    finished = placeholders(len(FINISHED))
    found = tx.query(
        "SELECT w.name, w.version, w.hash, w.deployed_at, "
        f"SUM(CASE WHEN i.status IN ({finished}) THEN 0 "
        "WHEN i.id IS NULL THEN 0 ELSE 1 END), "
        f"SUM(CASE WHEN i.status IN ({finished}) THEN 1 ELSE 0 END) "
        "FROM wf_workflow w LEFT JOIN wf_instance i ON i.table_hash = w.hash "
        + ("WHERE w.name = ? " if name else "")
        + "GROUP BY w.name, w.version, w.hash, w.deployed_at "
        "ORDER BY w.name, w.version",
        (*FINISHED, *FINISHED, *((name,) if name else ())),
    )
    if name and not found:
        raise UnknownWorkflow(f"no deployed workflow '{name}'")
    latest: dict[str, int] = {}
    for workflow, version, *_ in found:
        named = rows.text(workflow)
        latest[named] = max(latest.get(named, 0), rows.integer(version))
    return [rows.version_info(r, latest) for r in found]
