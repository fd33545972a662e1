"""The tables swarm keeps in a database, created and migrated by swarm (``swarm_schema`` holds the version).

One database holds any number of teams: every row names its team. Steps
are only ever appended; a process applies the ones the database lacks, one
process at a time (an advisory lock), each in the same transaction as the
version it brings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

MIGRATION_LOCK = 0x5357_4152_4D00
"""The advisory lock key migrations hold ("SWARM")."""

STEPS: tuple[str, ...] = (
    # 1: teams, activity, inboxes, tasks, the permission record
    """
    CREATE TABLE swarm_teams (
        team text PRIMARY KEY,
        doc jsonb NOT NULL,
        version bigint NOT NULL DEFAULT 1
    );
    CREATE TABLE swarm_activity (
        team text NOT NULL,
        agent text NOT NULL,
        doc jsonb NOT NULL,
        PRIMARY KEY (team, agent)
    );
    CREATE TABLE swarm_inbox (
        id bigserial PRIMARY KEY,
        team text NOT NULL,
        agent text NOT NULL,
        msg_id text NOT NULL,
        entry jsonb NOT NULL,
        sent_at timestamptz NOT NULL DEFAULT now(),
        delivered_at timestamptz,
        UNIQUE (team, agent, msg_id)
    );
    CREATE INDEX swarm_inbox_pending ON swarm_inbox (team, agent, id) WHERE delivered_at IS NULL;
    CREATE TABLE swarm_task_lists (
        team text PRIMARY KEY,
        top integer NOT NULL DEFAULT 0
    );
    CREATE TABLE swarm_tasks (
        team text NOT NULL,
        id integer NOT NULL,
        doc jsonb NOT NULL,
        owner text,
        status text NOT NULL,
        version bigint NOT NULL DEFAULT 1,
        PRIMARY KEY (team, id)
    );
    CREATE TABLE swarm_permissions (
        id bigserial PRIMARY KEY,
        team text NOT NULL,
        event jsonb NOT NULL
    );
    CREATE INDEX swarm_permissions_team ON swarm_permissions (team, id);
    """,
    # 2: hosts that run teammates, and the signed spawn requests placed on them (swarm.runtime.hosts)
    """
    CREATE TABLE swarm_hosts (
        name text PRIMARY KEY,
        labels text[] NOT NULL DEFAULT '{}',
        max_teammates integer NOT NULL,
        dead_after real NOT NULL DEFAULT 15,
        running integer NOT NULL DEFAULT 0,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE swarm_spawn_requests (
        id bigserial PRIMARY KEY,
        team text NOT NULL,
        name text NOT NULL,
        host text,
        labels text[] NOT NULL DEFAULT '{}',
        doc jsonb NOT NULL,
        signature text NOT NULL,
        status text NOT NULL DEFAULT 'pending',
        taken_by text,
        reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX swarm_spawn_requests_pending ON swarm_spawn_requests (id) WHERE status = 'pending';
    CREATE TABLE swarm_spawn_accepted (
        request_id text PRIMARY KEY,
        host text NOT NULL,
        accepted_at timestamptz NOT NULL DEFAULT now()
    );
    """,
)
VERSION = len(STEPS)


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Bring the database to ``VERSION``; return the version it had."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        cur.execute("CREATE TABLE IF NOT EXISTS swarm_schema (version integer NOT NULL)")
        cur.execute("SELECT version FROM swarm_schema")
        row = cur.fetchone()
        had = row[0] if row else 0
        if row is None:
            cur.execute("INSERT INTO swarm_schema (version) VALUES (0)")
        for number in range(had, VERSION):
            cur.execute(STEPS[number].encode())
            cur.execute("UPDATE swarm_schema SET version = %s", (number + 1,))
    return int(had)
