"""The practice page: the catalogue of episode starts and each person's episodes.

- ``practice_starts``: episode starts imported by ``rescue review import-practice`` (the start as
  JSON with its role cards and initial hidden state, which stay on the server, and its options).
- ``practice_episodes``: one person's attempt: the actions so far, their count (the conditional
  update's version), and the finished record (see rescue_bench.review.practice).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('practice_starts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=1200), nullable=False),
    sa.Column('sample_id', sa.String(length=1024), nullable=False),
    sa.Column('scenario', sa.String(length=16), nullable=False),
    sa.Column('start', sa.Text(), nullable=False),
    sa.Column('options', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    op.create_table('practice_episodes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('start_id', sa.Integer(), nullable=False),
    sa.Column('actions', sa.Text(), nullable=False),
    sa.Column('steps', sa.Integer(), nullable=False),
    sa.Column('finished', sa.Boolean(), nullable=False),
    sa.Column('record', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['start_id'], ['practice_starts.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('practice_episodes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_practice_episodes_start_id'), ['start_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_practice_episodes_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('practice_episodes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_practice_episodes_user_id'))
        batch_op.drop_index(batch_op.f('ix_practice_episodes_start_id'))
    op.drop_table('practice_episodes')
    op.drop_table('practice_starts')
