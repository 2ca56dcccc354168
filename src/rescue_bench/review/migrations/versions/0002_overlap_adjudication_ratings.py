"""Overlap, adjudication and the judge-rating questionnaire (several annotators per segment).

- ``segments.review_mode``: ``shared`` (one final copy for every assignee, the default for every existing segment)
  or ``independent`` (each assignee edits a copy of their own; an admin adjudicates into the final
  copy). Existing databases keep working unchanged after the upgrade.
- ``rating_sets``, ``rating_items``, ``rating_raters``, ``ratings``: the questionnaire of the
  paper's Table 12 (see rescue_bench.review.models).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('rating_sets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('file_name', sa.String(length=1024), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('items', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key'),
    sa.UniqueConstraint('name')
    )
    op.create_table('rating_items',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('set_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('record_id', sa.String(length=200), nullable=False),
    sa.Column('task', sa.String(length=8), nullable=False),
    sa.Column('sample_id', sa.String(length=1024), nullable=False),
    sa.Column('scenario', sa.String(length=16), nullable=False),
    sa.Column('row', sa.Integer(), nullable=True),
    sa.Column('reference', sa.Text(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['set_id'], ['rating_sets.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('set_id', 'position'),
    sa.UniqueConstraint('set_id', 'record_id')
    )
    with op.batch_alter_table('rating_items', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rating_items_set_id'), ['set_id'], unique=False)

    op.create_table('rating_raters',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('set_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['set_id'], ['rating_sets.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('set_id', 'user_id')
    )
    with op.batch_alter_table('rating_raters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rating_raters_user_id'), ['user_id'], unique=False)

    op.create_table('ratings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('score', sa.Integer(), nullable=False),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['rating_items.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('item_id', 'user_id')
    )
    with op.batch_alter_table('ratings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ratings_user_id'), ['user_id'], unique=False)

    with op.batch_alter_table('segments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('review_mode', sa.String(length=16), server_default='shared', nullable=False))



def downgrade() -> None:
    with op.batch_alter_table('segments', schema=None) as batch_op:
        batch_op.drop_column('review_mode')

    with op.batch_alter_table('ratings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ratings_user_id'))

    op.drop_table('ratings')
    with op.batch_alter_table('rating_raters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rating_raters_user_id'))

    op.drop_table('rating_raters')
    with op.batch_alter_table('rating_items', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rating_items_set_id'))

    op.drop_table('rating_items')
    op.drop_table('rating_sets')
