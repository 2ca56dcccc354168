"""Alembic environment of the review database: run with the connection ``rescue_bench.review.db`` passes."""

from __future__ import annotations

from alembic import context

from rescue_bench.review.models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - the package always passes a connection
    raise RuntimeError("run migrations through `rescue review init`, which passes a connection")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
