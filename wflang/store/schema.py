"""The store's schema, as numbered migrations shared by SQLite and PostgreSQL.

A migration is a list of statements written once for both databases; the few
words that differ (``{json}``, ``{autoid}``) are filled in per dialect.
``migrate`` applies the missing ones in order, each in its own transaction,
and records it in ``wf_schema``; running it twice does nothing the second
time, and two processes running it at once are serialised by a lock (an
advisory lock on PostgreSQL, the write lock of ``BEGIN IMMEDIATE`` on SQLite),
so the loser sees the winner's rows and skips.

Times are integer milliseconds since the epoch, taken from the database clock
(or from an injected clock in tests), so every worker agrees on "now".
``{without_rowid}`` keeps SQLite tables that are looked up by their primary
key in one b-tree instead of a table and an index: fewer pages per commit.
A migration's text is written out, not built from the code's constants: what it
made in a store must not change when they do (the statuses a partial index holds
are matched by the queries that use it: ``test_write_plans`` pins the two).
"""

from __future__ import annotations

from attrs import frozen

from wflang.store.backend import MOVED_SQLSTATE


@frozen
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    #: Statements only PostgreSQL runs (after ``statements``): functions, collations.
    postgresql: tuple[str, ...] = ()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema",
        (
            # Compiled versions: the table JSON is the contract a worker runs.
            """CREATE TABLE wf_workflow (
                name text NOT NULL,
                version integer NOT NULL,
                hash text NOT NULL,
                table_json {json} NOT NULL,
                source_file text,
                deployed_at bigint NOT NULL,
                PRIMARY KEY (name, version))""",
            """CREATE UNIQUE INDEX wf_workflow_hash ON wf_workflow (hash)""",
            # One row per instance, pinned to the table hash it started on.
            # state is NULL until a worker takes the start transition.
            # wake_at: when its next timer is due (NULL: none).
            """CREATE TABLE wf_instance (
                id text PRIMARY KEY,
                workflow text NOT NULL,
                version integer NOT NULL,
                table_hash text NOT NULL,
                status text NOT NULL,
                input {json} NOT NULL,
                state {json},
                seq bigint NOT NULL DEFAULT -1,
                seed bigint NOT NULL,
                parent_id text,
                parent_key text,
                wake_at bigint,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL)""",
            """CREATE INDEX wf_instance_wake ON wf_instance (wake_at)
                WHERE wake_at IS NOT NULL""",
            """CREATE INDEX wf_instance_status ON wf_instance (status, workflow)""",
            """CREATE INDEX wf_instance_hash ON wf_instance (table_hash, status)""",
            # Append-only: one row per committed transition.
            """CREATE TABLE wf_history (
                instance_id text NOT NULL,
                seq bigint NOT NULL,
                at bigint NOT NULL,
                event {json},
                input {json},
                decisions {json} NOT NULL,
                commands {json} NOT NULL,
                idempotency_key text NOT NULL,
                actor text,
                reason text,
                worker text,
                PRIMARY KEY (instance_id, seq)){without_rowid}""",
            # Scheduled timers; a due timer wakes its instance.
            """CREATE TABLE wf_timer (
                instance_id text NOT NULL,
                timer_id text NOT NULL,
                due_at bigint NOT NULL,
                PRIMARY KEY (instance_id, timer_id)){without_rowid}""",
            """CREATE INDEX wf_timer_due ON wf_timer (due_at)""",
            # Events for an instance from outside its own transitions: signals,
            # messages, human-task outputs, child outcomes, ops actions. A key
            # makes a delivery idempotent: a second insert with it is ignored.
            """CREATE TABLE wf_inbox (
                id {autoid},
                instance_id text NOT NULL,
                event {json} NOT NULL,
                dedupe_key text,
                actor text,
                reason text,
                available_at bigint NOT NULL,
                consumed_seq bigint)""",
            """CREATE UNIQUE INDEX wf_inbox_dedupe ON wf_inbox (instance_id, dedupe_key)""",
            """CREATE INDEX wf_inbox_pending ON wf_inbox (available_at, instance_id)
                WHERE consumed_seq IS NULL""",
            # The work queue: service calls run by workers under a lease, and
            # human tasks waiting for a person. lease_epoch is the fencing token.
            """CREATE TABLE wf_task (
                key text PRIMARY KEY,
                instance_id text NOT NULL,
                node text NOT NULL,
                kind text NOT NULL,
                service text,
                args {json} NOT NULL,
                attempt integer NOT NULL,
                form {json},
                assignee text,
                status text NOT NULL,
                run_at bigint NOT NULL,
                at_most_once integer NOT NULL DEFAULT 0,
                claims integer NOT NULL DEFAULT 0,
                lease_owner text,
                lease_epoch bigint NOT NULL DEFAULT 0,
                lease_expires_at bigint,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL){without_rowid}""",
            """CREATE INDEX wf_task_ready ON wf_task (run_at) WHERE status = 'ready'""",
            """CREATE INDEX wf_task_leased ON wf_task (lease_expires_at)
                WHERE status = 'running'""",
            # By instance only: a task's status changes three times, its instance never.
            """CREATE INDEX wf_task_instance ON wf_task (instance_id)""",
            # The outbox: what other systems may consume (instances finished).
            """CREATE TABLE wf_outbox (
                id {autoid},
                instance_id text NOT NULL,
                seq bigint NOT NULL,
                kind text NOT NULL,
                payload {json} NOT NULL,
                created_at bigint NOT NULL,
                published_at bigint)""",
            """CREATE INDEX wf_outbox_unpublished ON wf_outbox (id) WHERE published_at IS NULL""",
        ),
    ),
    Migration(
        2,
        "message correlation; who started an instance",
        (
            # What each waiting instance listens for: a token at a `wait ... message M
            # correlate EXPR`, with the text of EXPR's value when the wait began.
            """CREATE TABLE wf_subscription (
                instance_id text NOT NULL,
                token bigint NOT NULL,
                message text NOT NULL,
                correlation text NOT NULL,
                created_at bigint NOT NULL,
                PRIMARY KEY (instance_id, token)){without_rowid}""",
            """CREATE INDEX wf_subscription_key ON wf_subscription (message, correlation)""",
            # Published messages kept for later subscribers (until expires_at) and to
            # recognise a second publication with the same key.
            """CREATE TABLE wf_message (
                id {autoid},
                message text NOT NULL,
                correlation text NOT NULL,
                payload {json} NOT NULL,
                dedupe_key text,
                actor text,
                published_at bigint NOT NULL,
                expires_at bigint NOT NULL)""",
            """CREATE UNIQUE INDEX wf_message_dedupe ON wf_message (message, dedupe_key)""",
            """CREATE INDEX wf_message_key ON wf_message (message, correlation, expires_at)""",
            # Who started an instance and why: the actor and reason of its start row.
            """ALTER TABLE wf_instance ADD COLUMN created_by text""",
            """ALTER TABLE wf_instance ADD COLUMN created_reason text""",
        ),
    ),
    Migration(
        3,
        "what each step changed in the context",
        (
            # JSON Patch operations with old values (``runtime.changes``); NULL: none, or
            # a row written before this migration.
            """ALTER TABLE wf_history ADD COLUMN changes {json}""",
        ),
    ),
    Migration(
        4,
        "where instances wait, and since when",
        (
            # What an active instance waits on (``waiting.waiting_on``: labels such as
            # ``signal:approval timer``, sorted, space-separated); NULL once it finished.
            """ALTER TABLE wf_instance ADD COLUMN waiting_on text""",
            """CREATE INDEX wf_instance_waiting_on ON wf_instance (waiting_on)
                WHERE waiting_on IS NOT NULL""",
            # updated_at is when an instance last moved (its last transition): by status
            # and it, for `wf list --stuck` (a range of each unfinished status's).
            """CREATE INDEX wf_instance_moved ON wf_instance (status, updated_at)""",
        ),
    ),
    Migration(
        5,
        "browsing instances newest first; the source of each version",
        (
            # The console's pages of instances (``store.browse``): newest first, a page
            # after a (created_at, id) key, of all of them, of one workflow, of one status.
            """CREATE INDEX wf_instance_created ON wf_instance (created_at, id)""",
            """CREATE INDEX wf_instance_flow_created ON wf_instance (workflow, created_at, id)""",
            """CREATE INDEX wf_instance_status_created ON wf_instance (status, created_at, id)""",
            # An instance's children, shown on its page.
            """CREATE INDEX wf_instance_parent ON wf_instance (parent_id)
                WHERE parent_id IS NOT NULL""",
            # The text a version was compiled from, as deployed (NULL: not given, or
            # deployed before this migration): what its diagram is drawn from.
            """ALTER TABLE wf_workflow ADD COLUMN source_text text""",
        ),
    ),
    Migration(
        6,
        "the stuck instances in the order they stopped",
        (
            # `wf list --stuck` and the console: the unfinished instances, the longest
            # still first; one walk of this index in order (``wf_instance_moved`` gives a
            # range per status, which the database then merges and sorts).
            """CREATE INDEX wf_instance_still ON wf_instance (updated_at, id)
                WHERE status IN ('pending', 'running', 'waiting', 'compensating')""",
        ),
    ),
    Migration(
        7,
        "bounded histories: checkpoints and the history archive",
        (
            # An instance as it was after step ``seq`` (``runtime.history``): at most two
            # per instance; the older one is where its kept history begins.
            """CREATE TABLE wf_checkpoint (
                instance_id text NOT NULL,
                seq bigint NOT NULL,
                at bigint NOT NULL,
                state {json} NOT NULL,
                PRIMARY KEY (instance_id, seq)){without_rowid}""",
            # History rows compacted away under a policy that archives them: the columns
            # of wf_history, and when they moved. Never read by a worker.
            """CREATE TABLE wf_history_archive (
                instance_id text NOT NULL,
                seq bigint NOT NULL,
                at bigint NOT NULL,
                event {json},
                input {json},
                decisions {json} NOT NULL,
                commands {json} NOT NULL,
                idempotency_key text NOT NULL,
                actor text,
                reason text,
                worker text,
                changes {json},
                archived_at bigint NOT NULL,
                PRIMARY KEY (instance_id, seq)){without_rowid}""",
        ),
    ),
    Migration(
        8,
        "carried steps: the guard's error",
        (),
        (
            # A carried step's guard (``wflang.store.carried``) calls it when something
            # moved: the error rolls back the step's pipelined transaction, whose writes
            # were sent with the guard, and tells the worker to run the general path.
            f"""CREATE OR REPLACE FUNCTION wf_moved() RETURNS integer LANGUAGE plpgsql AS $$
                BEGIN
                    RAISE EXCEPTION 'the instance or its call moved since its step was carried'
                        USING ERRCODE = '{MOVED_SQLSTATE}';
                END $$""",
        ),
    ),
    Migration(
        9,
        "fewer index entries written at each step",
        (
            # The finished instances by when they ended (``activity``, ``purge``), in place
            # of ``wf_instance_moved`` (status, updated_at): that one took a new entry at
            # every step of an active instance, as ``wf_instance_still`` does, one page
            # more for each step to write. A finished instance's entry is written once.
            """DROP INDEX wf_instance_moved""",
            """CREATE INDEX wf_instance_ended ON wf_instance (updated_at, id)
                WHERE (status = 'completed' OR status = 'failed' OR status = 'cancelled'
                OR status = 'compensated' OR status = 'dead_lettered')""",
            # Its condition as comparisons, not an IN list: SQLite builds a temporary
            # table for an IN list of constants each time it evaluates one, here at every
            # write of an instance row (``status.one_of``).
            """DROP INDEX wf_instance_still""",
            """CREATE INDEX wf_instance_still ON wf_instance (updated_at, id)
                WHERE (status = 'pending' OR status = 'running' OR status = 'waiting'
                OR status = 'compensating')""",
            # An instance's tasks are a range of the primary key (every key starts with its
            # instance's id and a colon, ``keys.task_key``; ``status.TASKS_OF``): an index
            # by instance was one more entry, and page, for each task a step inserts.
            """DROP INDEX wf_task_instance""",
        ),
        (
            # That range is a prefix in byte order: the "C" collation (SQLite compares
            # text by its bytes already); under a language's collation a colon sorts
            # apart from where its bytes put it.
            'ALTER TABLE wf_task ALTER COLUMN key TYPE text COLLATE "C"',
        ),
    ),
)

LATEST = MIGRATIONS[-1].version


def schema_problem(found: int, url: str) -> str | None:
    """What is wrong with a store at schema version ``found`` for this wflang, if any."""
    if found < LATEST:
        return (
            f"the store at {url} has schema version {found}, this wflang needs "
            f"{LATEST}: run `wf store migrate --store {url}`"
        )
    if found > LATEST:
        return (
            f"the store at {url} has schema version {found}, newer than this "
            f"wflang knows ({LATEST}): upgrade wflang"
        )
    return None
