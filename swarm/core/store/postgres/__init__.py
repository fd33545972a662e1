"""The PostgreSQL store: a team's file, inboxes, tasks and activity as rows (docs/postgres.md).

Loaded only for a team whose store is a database (``swarm.core.store``);
the driver is ``psycopg`` 3, the optional ``postgres`` extra.
"""
