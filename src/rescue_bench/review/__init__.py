"""The review web app (``rescue review``): experts verify drafts row by row, beside the video.

Layers, each usable alone:

- :mod:`~rescue_bench.review.models` and :mod:`~rescue_bench.review.db`: the database (SQLAlchemy 2,
  SQLite in WAL mode or PostgreSQL through psycopg 3, Alembic migrations shipped in the package);
- services, plain functions over a ``Session``: :mod:`~rescue_bench.review.store` (import, export),
  :mod:`~rescue_bench.review.edits` (saves with optimistic versioning, audit, comments, discard),
  :mod:`~rescue_bench.review.copies` (which copy of a segment a user reads: the one rule),
  :mod:`~rescue_bench.review.access` (assignments, review modes, overlap, visibility),
  :mod:`~rescue_bench.review.adjudication` (annotators' copies side by side, the final value),
  :mod:`~rescue_bench.review.agreement` (inter-annotator agreement of the database),
  :mod:`~rescue_bench.review.ratings` (the judge-rating questionnaire),
  :mod:`~rescue_bench.review.practice` (the practice page), :mod:`~rescue_bench.review.progress`
  (dashboard figures), :mod:`~rescue_bench.review.users` (accounts, login throttling);
- :mod:`~rescue_bench.review.operations`: what each ``rescue review`` command does to the database
  (its transactions), so the command line only parses and prints;
- :mod:`~rescue_bench.review.app`: the ASGI app (FastAPI), its JSON API and server-rendered pages
  (:mod:`~rescue_bench.review.api`, :mod:`~rescue_bench.review.pages`, the several-annotator
  :mod:`~rescue_bench.review.overlap_routes`, :mod:`~rescue_bench.review.rating_routes` and
  :mod:`~rescue_bench.review.practice_routes`); handlers take their session and user as FastAPI
  dependencies from :mod:`~rescue_bench.review.deps` and return pydantic response models.

Nothing here is imported by ``rescue --help``; the command imports it when run.
"""

from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.db import Database, check_schema, upgrade
from rescue_bench.review.edits import EDITABLE_FIELDS, RowState, add_comment, read_row, set_status
from rescue_bench.review.errors import Conflict, Forbidden, Invalid, Locked, NotFound, ReviewError, Throttled
from rescue_bench.review.store import export_clips, export_lines, import_clips, segment_key

__all__ = [
    "Conflict",
    "Database",
    "EDITABLE_FIELDS",
    "Forbidden",
    "Invalid",
    "Locked",
    "NotFound",
    "ReviewConfig",
    "ReviewError",
    "RowState",
    "Throttled",
    "add_comment",
    "check_schema",
    "export_clips",
    "export_lines",
    "import_clips",
    "read_row",
    "segment_key",
    "set_status",
    "upgrade",
]
