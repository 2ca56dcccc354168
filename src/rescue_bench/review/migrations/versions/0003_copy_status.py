"""Per-copy status: in independent mode an annotator's discard belongs to their own copy.

- ``copies.status`` (``open`` for every existing copy), ``copies.status_reason``, ``copies.status_at``.
  A segment's own status (``segments.status``) stays what admins and shared-mode annotators set.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('copies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status', sa.String(length=16), server_default='open', nullable=False))
        batch_op.add_column(sa.Column('status_reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('status_at', sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('copies', schema=None) as batch_op:
        batch_op.drop_column('status_at')
        batch_op.drop_column('status_reason')
        batch_op.drop_column('status')
