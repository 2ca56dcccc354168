"""The review database (SQLAlchemy 2 typed ORM). Changed only through Alembic migrations.

How the tables fit together, and why (one copy per segment by default, with room for overlap and adjudication):

- ``segments`` and ``segment_rows`` hold what was imported: one segment per clip (``header`` keeps
  every clip key but ``rows``), one row per clip row, with the imported value as ``draft``. The draft
  is never changed after import.
- A ``copies`` record is one reviewable copy of a segment's rows. Every segment has its ``final``
  copy, the one export reads. An annotator assigned in the default (shared) mode edits the final copy
  directly, so two people on one segment meet the version check instead of overwriting each other.
  Independent per-annotator copies (overlap: k annotators per segment) are ``copies`` of kind ``annotator`` that an
  assignment points to; adjudication writes the final copy.
- ``row_values`` holds the human value of one row in one copy: ``value`` (the whole row as the
  release format writes it; NULL while nobody saved, i.e. the draft), ``version`` (optimistic
  versioning: a save names the version it started from), ``reviewed`` / ``edited`` flags, and who
  changed it last; a ``flag`` (skipped / discarded, with its reason) when the annotator set one.
- ``assignments`` say who may see and edit which segment, and which copy they edit.
- ``audit_log`` keeps every change (who, when, field, old, new as JSON text; NULL = the key was
  absent), every status change and comment; adjudication gets its own ``action``.
- ``segments.review_mode``: ``shared`` (every assignee edits the final copy, the default) or
  ``independent`` (each assignee edits an annotator copy of their own that starts from the draft; an admin adjudicates into the final copy). A mode changes only while no work is saved.
- ``rating_sets``, ``rating_items``, ``rating_raters`` and ``ratings``: the judge-rating
  questionnaire (the paper's Table 12). An item holds the reference annotation and the model's
  answer as text; the judge's score and the model's name are never stored, so no page can show them.
  A set of kind ``pairs`` (the closed loop's study) has ``pair_items`` and ``pair_ratings`` instead:
  a pair holds the session up to a start and two continuations as a rater reads them; the runs and
  episodes they came from are stored for the export only (admins), never a J or an agent's name.
- ``login_throttle`` and ``settings`` (the cookie-signing secret, the reveal rule of independent
  copies) live here too, so several worker processes behind one proxy share them.

JSON values are stored as text written by this module (``json.dumps``), never through a driver's
JSON type: PostgreSQL's ``jsonb`` would reorder keys, and byte-identical export needs exact text.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from rescue_bench import fileio

ROLES: tuple[str, ...] = ("admin", "annotator")
"""User roles. Admins see and edit everything; annotators only the segments assigned to them."""

SEGMENT_STATUSES: tuple[str, ...] = ("open", "discarded")
REVIEW_MODES: tuple[str, ...] = ("shared", "independent")
"""``shared``: every assignee edits the final copy; ``independent``: each edits a copy of their own."""
COPY_KINDS: tuple[str, ...] = ("final", "annotator")
ROW_FLAGS: tuple[str, ...] = ("skipped", "discarded")
"""A row's flag in one copy: ``skipped`` (left for later, with a reason) or ``discarded`` (it cannot
be annotated as it is, with a reason). Marking the row reviewed clears it."""
FINAL_LABEL = "final"
"""``copies.label`` of a segment's final copy (annotator copies are labelled ``user:<id>``)."""


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite has no time zones: stored as naive UTC)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def dumps(value: Any) -> str:
    """The one JSON text form of every stored value (compact, UTF-8, key order kept); strict JSON:
    ``ValueError`` for NaN or an infinity, which no JSON reader accepts back."""
    return fileio.dumps(value, separators=(",", ":"))


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    auth_epoch: Mapped[int] = mapped_column(Integer, default=0)
    """Bumped on logout and password change: every cookie signed with an older epoch stops working."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class ImportBatch(Base):
    """One imported file: the dashboard's "prepared files"."""

    __tablename__ = "imports"

    id: Mapped[int] = mapped_column(primary_key=True)
    file_name: Mapped[str] = mapped_column(String(1024))
    sha256: Mapped[str] = mapped_column(String(64))
    segments: Mapped[int] = mapped_column(Integer)
    rows: Mapped[int] = mapped_column(Integer)
    imported_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Segment(Base):
    __tablename__ = "segments"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(32), unique=True)
    """Opaque, URL-safe id used in URLs and the API (sample ids contain slashes)."""
    sample_id: Mapped[str] = mapped_column(String(1024), unique=True)
    scenario: Mapped[str] = mapped_column(String(16))
    header_json: Mapped[str] = mapped_column(Text)
    """The clip's keys except ``rows`` as imported (``Clip.to_json()``), JSON text."""
    position: Mapped[int] = mapped_column(Integer, index=True)
    """Import order: listing and export follow it."""
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"))
    participants_json: Mapped[str] = mapped_column(Text)
    """The clip's clients (``Clip.clients``: given, else inferred from the rows), JSON text."""
    row_count: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="open")
    status_reason: Mapped[str | None] = mapped_column(Text)
    status_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    status_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    review_mode: Mapped[str] = mapped_column(String(16), default="shared", server_default="shared")
    """One of :data:`REVIEW_MODES`: ``shared`` (one final copy) or ``independent`` (a copy per annotator)."""

    rows: Mapped[list[SegmentRow]] = relationship(order_by="SegmentRow.position", back_populates="segment")

    @property
    def header(self) -> dict[str, Any]:
        return json.loads(self.header_json)

    @property
    def participants(self) -> list[str]:
        return json.loads(self.participants_json)


class SegmentRow(Base):
    __tablename__ = "segment_rows"
    __table_args__ = (UniqueConstraint("segment_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    """1-based place in the clip; the ``{row_index}`` of URLs (equal to ``row_index`` in the release)."""
    draft_json: Mapped[str] = mapped_column(Text)
    """The row as imported (``Row.model_dump(exclude_unset=True)``), JSON text; never changed."""

    segment: Mapped[Segment] = relationship(back_populates="rows")


class Copy(Base):
    """One reviewable copy of a segment's rows (see the module docstring)."""

    __tablename__ = "copies"
    __table_args__ = (UniqueConstraint("segment_id", "label"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(64))
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status: Mapped[str] = mapped_column(String(16), default="open", server_default="open")
    """An annotator copy's own status (``open`` | ``discarded``): in independent mode an annotator's
    discard stays in their copy (blind: it neither locks nor shows in the others' copies)."""
    status_reason: Mapped[str | None] = mapped_column(Text)
    status_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RowValue(Base):
    __tablename__ = "row_values"
    __table_args__ = (UniqueConstraint("copy_id", "row_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    copy_id: Mapped[int] = mapped_column(ForeignKey("copies.id", ondelete="CASCADE"))
    row_id: Mapped[int] = mapped_column(ForeignKey("segment_rows.id", ondelete="CASCADE"), index=True)
    value_json: Mapped[str | None] = mapped_column(Text)
    """The human value of the whole row (JSON text); NULL while it equals the untouched draft."""
    version: Mapped[int] = mapped_column(Integer, default=0)
    reviewed: Mapped[bool] = mapped_column(Boolean, default=False)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    """The human value differs from the draft."""
    reviewed_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    reviewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    flag: Mapped[str | None] = mapped_column(String(16))
    """One of :data:`ROW_FLAGS`, or NULL."""
    flag_reason: Mapped[str | None] = mapped_column(Text)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("segment_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    copy_id: Mapped[int] = mapped_column(ForeignKey("copies.id"))
    """The copy this annotator edits: the segment's final copy in shared mode."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))


class Comment(Base):
    __tablename__ = "comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id", ondelete="CASCADE"), index=True)
    row_id: Mapped[int | None] = mapped_column(ForeignKey("segment_rows.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    text: Mapped[str] = mapped_column(Text)


class AuditEntry(Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_row", "row_id", "id"), Index("ix_audit_segment", "segment_id", "id"))

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    """NULL for changes made from the command line (import, user administration)."""
    action: Mapped[str] = mapped_column(String(32))
    """edit, review, flag (a row skipped or discarded, or its flag cleared), comment, discard, restore, assign, unassign, import, user; with several annotators: adjudicate,
    mode (a segment's review mode), rate (a questionnaire score), ratings (a questionnaire imported or
    a rater added), setting."""
    segment_id: Mapped[int | None] = mapped_column(ForeignKey("segments.id", ondelete="SET NULL"))
    row_id: Mapped[int | None] = mapped_column(ForeignKey("segment_rows.id", ondelete="SET NULL"))
    copy_id: Mapped[int | None] = mapped_column(ForeignKey("copies.id", ondelete="SET NULL"))
    field: Mapped[str | None] = mapped_column(String(64))
    old_json: Mapped[str | None] = mapped_column(Text)
    """JSON text of the old value; NULL when the key was absent."""
    new_json: Mapped[str | None] = mapped_column(Text)
    version: Mapped[int | None] = mapped_column(Integer)
    """The row version this change created."""
    note: Mapped[str | None] = mapped_column(Text)


class LoginThrottle(Base):
    __tablename__ = "login_throttle"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    """``user:<name>@<address>`` or ``ip:<address>`` (:func:`rescue_bench.review.security.throttle_keys`)."""
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failure_at: Mapped[datetime] = mapped_column(UTCDateTime)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Setting(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


RATING_KINDS: tuple[str, ...] = ("scores", "pairs")


class RatingSet(Base):
    """One imported questionnaire (``rescue review import-ratings SAMPLE.csv``)."""

    __tablename__ = "rating_sets"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(32), unique=True)
    """Opaque, URL-safe id (the name may say which model was rated: raters never see it)."""
    name: Mapped[str] = mapped_column(String(200), unique=True)
    """Shown to admins only."""
    file_name: Mapped[str] = mapped_column(String(1024))
    sha256: Mapped[str] = mapped_column(String(64))
    items: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    kind: Mapped[str] = mapped_column(String(16), server_default=RATING_KINDS[0])
    """``scores`` (1-5 per item, Table 12) or ``pairs`` (which of two continuations, the closed loop)."""
    salt: Mapped[str | None] = mapped_column(String(64))
    """A pair set's secret for the order each rater sees each pair's sides in (never shown)."""


class RatingItem(Base):
    """One answer to rate: the reference annotation beside the model's answer (text from the sample)."""

    __tablename__ = "rating_items"
    __table_args__ = (UniqueConstraint("set_id", "record_id"), UniqueConstraint("set_id", "position"))

    id: Mapped[int] = mapped_column(primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("rating_sets.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    """1-based order of the sample file (the sample is shuffled when drawn)."""
    record_id: Mapped[str] = mapped_column(String(200))
    """The run's record id (``id`` column): what ``export-ratings`` writes back."""
    task: Mapped[str] = mapped_column(String(8))
    sample_id: Mapped[str] = mapped_column(String(1024))
    scenario: Mapped[str] = mapped_column(String(16))
    row: Mapped[int | None] = mapped_column(Integer)
    reference: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)


class RatingRater(Base):
    """Who rates a questionnaire (several raters per item are allowed)."""

    __tablename__ = "rating_raters"
    __table_args__ = (UniqueConstraint("set_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("rating_sets.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Rating(Base):
    """One rater's 1-5 score of one item (changed in place; every change is in the audit log)."""

    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("item_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("rating_items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    score: Mapped[int] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PairItem(Base):
    """One pair of a pairwise questionnaire: the session up to a start and two continuations (the
    sample's sides A and B), as a rater reads them (JSON lists of turns)."""

    __tablename__ = "pair_items"
    __table_args__ = (UniqueConstraint("set_id", "pair_id"), UniqueConstraint("set_id", "position"))

    id: Mapped[int] = mapped_column(primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("rating_sets.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    pair_id: Mapped[str] = mapped_column(String(200))
    sample_id: Mapped[str] = mapped_column(String(1024))
    scenario: Mapped[str] = mapped_column(String(16))
    start_row: Mapped[int | None] = mapped_column(Integer)
    context: Mapped[str] = mapped_column(Text)
    a_run: Mapped[str] = mapped_column(String(1024))
    """Export only (admins): the run folder of side A; no rater's page or payload holds it."""
    a_episode: Mapped[str] = mapped_column(String(1200))
    a_turns: Mapped[str] = mapped_column(Text)
    b_run: Mapped[str] = mapped_column(String(1024))
    b_episode: Mapped[str] = mapped_column(String(1200))
    b_turns: Mapped[str] = mapped_column(Text)


class PairRating(Base):
    """One rater's answer to one pair, in the sample's A/B terms, and which side they saw first."""

    __tablename__ = "pair_ratings"
    __table_args__ = (UniqueConstraint("item_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("pair_items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    preferred: Mapped[str] = mapped_column(String(8))
    """``A``, ``B`` or ``tie`` (the sample's sides)."""
    reason: Mapped[str] = mapped_column(Text)
    support_a: Mapped[int | None] = mapped_column(Integer)
    support_b: Mapped[int | None] = mapped_column(Integer)
    shown_first: Mapped[str] = mapped_column(String(1))
    """The side the rater saw as their first continuation (``A`` or ``B``)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# ------------------------------------------------------------------------------------------------
# the practice page (rescue_bench.review.practice): a person plays the therapist
# ------------------------------------------------------------------------------------------------


PRACTICE_LEGACY_SIMULATOR = "scripted"
"""The simulator of practice starts and episodes stored before the catalogue named one: the one they
were played under, so they replay as they were played."""


class PracticeModel(Base):
    """A fitted simulator model the practice catalogue plays, stored whole: its episodes replay as
    they were played whatever model file the server has (a newer package may bundle another)."""

    __tablename__ = "practice_models"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    """:meth:`rescue_bench.sim.FittedModel.sha256` of ``model``."""
    name: Mapped[str] = mapped_column(String(1200))
    """``default`` (the bundled model) or the file it was imported from, as ``rescue sim eval`` records it."""
    model: Mapped[str] = mapped_column(Text)
    """The model as JSON."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PracticeStart(Base):
    """One episode start of the practice catalogue (the start itself never changed once imported;
    a later import may name another simulator for the episodes begun after it)."""

    __tablename__ = "practice_starts"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(1200), unique=True)
    """The episode id of ``rescue sim eval`` (``sim/<sample_id>/<row>``): runs pair by it."""
    sample_id: Mapped[str] = mapped_column(String(1024))
    scenario: Mapped[str] = mapped_column(String(16))
    start: Mapped[str] = mapped_column(Text)
    """The :class:`rescue_bench.sim.EpisodeStart` as JSON (transcript, cards, initial state): server-side only."""
    options: Mapped[str] = mapped_column(Text)
    """The :class:`rescue_bench.sim.SimOptions` it is played under, as JSON."""
    simulator: Mapped[str] = mapped_column(String(16), server_default=PRACTICE_LEGACY_SIMULATOR)
    """The offline simulator new episodes of this start play (``fitted`` or ``scripted``)."""
    model_sha256: Mapped[str | None] = mapped_column(String(64))
    """The ``practice_models`` row of the fitted model they play (``None`` for ``scripted``)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PracticeEpisode(Base):
    """One person's attempt at a start: the actions so far and, once finished, the record."""

    __tablename__ = "practice_episodes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    start_id: Mapped[int] = mapped_column(ForeignKey("practice_starts.id", ondelete="CASCADE"), index=True)
    actions: Mapped[str] = mapped_column(Text, default="[]")
    """JSON list of ``{"speak", "whom", "how", "turn"}``, one per step taken."""
    steps: Mapped[int] = mapped_column(Integer, default=0)
    """``len(actions)``: the conditional update's version."""
    finished: Mapped[bool] = mapped_column(Boolean, default=False)
    record: Mapped[str | None] = mapped_column(Text)
    """The finished episode's line of ``results/sim.jsonl`` (JSON)."""
    simulator: Mapped[str] = mapped_column(String(16), server_default=PRACTICE_LEGACY_SIMULATOR)
    """The offline simulator this episode plays, its start's when it began (replays never change it)."""
    model_sha256: Mapped[str | None] = mapped_column(String(64))
    """The ``practice_models`` row of the fitted model it plays (``None`` for ``scripted``)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    debrief_open: Mapped[bool | None] = mapped_column(Boolean)
    """Whether the person could read scores and debriefs when this episode began (they had finished
    every start of the catalogue); ``None`` for episodes begun before this was recorded."""
