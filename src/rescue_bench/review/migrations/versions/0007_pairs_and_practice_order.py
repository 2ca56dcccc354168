"""The closed loop's pairwise questionnaire, and what a practice episode's player had seen.

- ``rating_sets.kind`` (``scores``: the Table 12 questionnaire, what every existing set is;
  ``pairs``: which of two continuations) and ``rating_sets.salt`` (a pair set's secret for the side
  order each rater sees).
- ``pair_items``: a pair's session up to the start and its two continuations (and, for the export,
  the runs and episodes they came from); ``pair_ratings``: a rater's answer in the sample's A/B terms,
  the reason, the optional 1-5 support of each side, and the side shown first.
- ``practice_episodes.debrief_open``: whether the player could read scores and debriefs when the
  episode began (NULL for the episodes begun before).

Columns are added in place (no batch copy), as in 0006.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('rating_sets', sa.Column('kind', sa.String(length=16), server_default='scores', nullable=False))
    op.add_column('rating_sets', sa.Column('salt', sa.String(length=64), nullable=True))
    op.create_table('pair_items',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('set_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.String(length=200), nullable=False),
    sa.Column('sample_id', sa.String(length=1024), nullable=False),
    sa.Column('scenario', sa.String(length=16), nullable=False),
    sa.Column('start_row', sa.Integer(), nullable=True),
    sa.Column('context', sa.Text(), nullable=False),
    sa.Column('a_run', sa.String(length=1024), nullable=False),
    sa.Column('a_episode', sa.String(length=1200), nullable=False),
    sa.Column('a_turns', sa.Text(), nullable=False),
    sa.Column('b_run', sa.String(length=1024), nullable=False),
    sa.Column('b_episode', sa.String(length=1200), nullable=False),
    sa.Column('b_turns', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['set_id'], ['rating_sets.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('set_id', 'pair_id'),
    sa.UniqueConstraint('set_id', 'position')
    )
    op.create_index(op.f('ix_pair_items_set_id'), 'pair_items', ['set_id'], unique=False)
    op.create_table('pair_ratings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('preferred', sa.String(length=8), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('support_a', sa.Integer(), nullable=True),
    sa.Column('support_b', sa.Integer(), nullable=True),
    sa.Column('shown_first', sa.String(length=1), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['pair_items.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('item_id', 'user_id')
    )
    op.create_index(op.f('ix_pair_ratings_user_id'), 'pair_ratings', ['user_id'], unique=False)
    op.add_column('practice_episodes', sa.Column('debrief_open', sa.Boolean(), nullable=True))


def downgrade() -> None:
    op.drop_column('practice_episodes', 'debrief_open')
    op.drop_index(op.f('ix_pair_ratings_user_id'), table_name='pair_ratings')
    op.drop_table('pair_ratings')
    op.drop_index(op.f('ix_pair_items_set_id'), table_name='pair_items')
    op.drop_table('pair_items')
    op.drop_column('rating_sets', 'salt')
    op.drop_column('rating_sets', 'kind')
