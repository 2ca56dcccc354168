"""Inter-annotator agreement of the review database: what is compared, and the report.

What is compared (:data:`MEASURES`), on the rows each annotator *marked reviewed* in their own copy of
an independent segment (an unreviewed row is still the draft, not a human judgement):

- labels, nominal level: the relation cycle state (RPP gold), the relation pattern, the utterance
  type, the first support strategy's type (SSP gold) and its resolved target (STP gold, resolved as
  the task builder does), the row's addressees. A rater who left the field empty gives the category
  "(none)"; a unit (segment, row) counts when at least one rater filled the field, so rows where
  the field does not apply (an utterance type on a therapist row) do not inflate agreement.
- emotion intensity, interval level: per client named in ``internal_emotion`` (their first item
  with an integer intensity 0-10, as ER takes it); a rater without such an item for that client
  gives no rating.

A rating outside its field's domain (a label the scenario does not have, an intensity that is not a
whole number 0-10: the review save refuses both, an older database may hold them) is left out of
the unit, and counted and named in the measure's ``left_out`` and notes, never dropped silently.
- free text: emotion descriptions (per client) and viewpoints (per source and target), compared
  between every two annotators who both wrote one: exact-match share (case and spacing ignored) and
  BERTScore F1 on the project's backbone (:mod:`rescue_bench.bertscore`; skipped with a note when the
  extra is not installed).

Per measure and scope (couple, family, all): Krippendorff's alpha with Cohen's and Fleiss' kappa
where they apply (:func:`rescue_bench.metrics.agreement.reliability`), each with a bootstrap interval
over segments. Beside them, the draft-vs-human change rate of every row field: over every human
review of a draft (annotator copies, and final copies of shared segments), the share of reviewed
rows where the reviewer's value differs from the draft (how much the experts corrected the model).

The functions on rows are pure; :func:`collect` reads them from a database session.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.data.models import Row
from rescue_bench.data.validate import intensity_problem, label_problem
from rescue_bench.labels import SCENARIOS, group_label
from rescue_bench.metrics.agreement import Level, Unit, reliability
from rescue_bench.metrics.bootstrap import bootstrap_ci
from rescue_bench.metrics.stats import mean_statistic
from rescue_bench.review.edits import EDITABLE_FIELDS
from rescue_bench.review.models import AuditEntry, Copy, RowValue, Segment, SegmentRow, User, dumps
from rescue_bench.tasks.er import integer_intensity
from rescue_bench.tasks.stp import resolve_target, strategy_type

NONE = "(none)"
"""The nominal category of an empty label."""
ALL = "all"
"""The scope pooling couple and family segments."""

Kind = Literal["nominal", "interval", "text"]


@dataclass(frozen=True)
class Measure:
    name: str
    label: str
    kind: Kind
    unit: Literal["row", "person", "pair"]
    """What one unit is: a row, a client in a row, or a (source, target) pair in a row."""
    label_keys: bool = False
    """Its values are label keys (``pursue_withdraw``), shown to people by their readable name."""


MEASURES: tuple[Measure, ...] = (
    Measure("relation_cycle_state", "Relation cycle state (RPP gold)", "nominal", "row", label_keys=True),
    Measure("relation_pattern", "Relation pattern", "nominal", "row", label_keys=True),
    Measure("utterance_type", "Utterance type", "nominal", "row", label_keys=True),
    Measure("strategy", "Support strategy (SSP gold)", "nominal", "row", label_keys=True),
    Measure("support_target", "Support target (STP gold)", "nominal", "row"),
    Measure("target", "Addressees (row target)", "nominal", "row"),
    Measure("intensity", "Emotion intensity (0-10)", "interval", "person"),
    Measure("emotion_description", "Emotion description", "text", "person"),
    Measure("viewpoint", "Viewpoint", "text", "pair"),
)
"""Every compared measure, in report order."""


def _label(value: Any) -> str:
    return value.strip() if isinstance(value, str) and value.strip() else NONE


def _names(values: Any) -> str:
    names = sorted({v.strip() for v in values or [] if isinstance(v, str) and v.strip()})
    return " + ".join(names) if names else NONE


LABEL_FIELD = {"relation_cycle_state": "relation_cycle_state", "relation_pattern": "relation_pattern",
               "utterance_type": "utterance_type", "strategy": "strategy_type"}
"""The release field whose closed label set each label measure's values come from."""


def invalid_values(model: Row, scenario: str) -> dict[str, dict[str, str]]:
    """One copy's ratings outside their field's domain, as measure -> {unit key: why} (a label the
    scenario does not have, an intensity that is not a whole number 0-10)."""
    raw = {"relation_cycle_state": model.relation_cycle_state, "relation_pattern": model.relation_pattern,
           "utterance_type": model.utterance_type, "strategy": strategy_type(model)}
    out: dict[str, dict[str, str]] = {}
    for measure, label_field in LABEL_FIELD.items():
        why = label_problem(raw[measure], label_field, scenario)
        if why:
            out.setdefault(measure, {})[""] = why.split(" (one of ")[0]
    for item in model.internal_emotion or []:
        person = (item.person or "").strip()
        why = intensity_problem(item.intensity) if person else None
        if why:
            out.setdefault("intensity", {}).setdefault(person, why)
    return out


def measure_values(model: Row, scenario: str) -> dict[str, dict[str, Hashable]]:
    """One copy's row as measure -> {unit key within the row: value} (see :data:`MEASURES`); a value
    outside its domain (:func:`invalid_values`) is no rating."""
    bad = invalid_values(model, scenario)

    def label(measure: str, value: str | None) -> dict[str, Hashable]:
        return {} if "" in bad.get(measure, {}) else {"": _label(value)}

    out: dict[str, dict[str, Hashable]] = {
        "relation_cycle_state": label("relation_cycle_state", model.relation_cycle_state),
        "relation_pattern": label("relation_pattern", model.relation_pattern),
        "utterance_type": label("utterance_type", model.utterance_type),
        "strategy": label("strategy", strategy_type(model) or NONE),
        "support_target": {"": resolve_target(model, group_label(scenario)) or NONE},
        "target": {"": _names(model.target)},
        "intensity": {},
        "emotion_description": {},
        "viewpoint": {},
    }
    for item in model.internal_emotion or []:
        person = (item.person or "").strip()
        if not person:
            continue
        level = integer_intensity(item.intensity)
        if level is not None:
            out["intensity"].setdefault(person, level)
        text = (item.emotion_description or "").strip()
        if text:
            out["emotion_description"].setdefault(person, text)
    for view in model.viewpoints_attitudes or []:
        source, target, text = ((v or "").strip() for v in (view.source, view.target, view.viewpoint))
        if source and target and text:
            out["viewpoint"].setdefault(f"{source} -> {target}", text)
    return out


@dataclass(frozen=True)
class RatedRow:
    """One row of an independent segment as each annotator who reviewed it holds it."""

    segment: str
    scenario: str
    position: int
    copies: dict[str, Row]
    """annotator -> their reviewed row."""
    measured: dict[str, dict[str, dict[str, Hashable]]] = field(default_factory=dict)
    """annotator -> :func:`measure_values` of their row, where the caller has it already."""

    @cached_property
    def values(self) -> dict[str, dict[str, dict[str, Hashable]]]:
        """annotator -> :func:`measure_values` of their row (worked out once per row)."""
        return {who: self.measured.get(who) or measure_values(row, self.scenario) for who, row in self.copies.items()}

    @cached_property
    def invalid(self) -> dict[str, dict[str, dict[str, str]]]:
        """annotator -> :func:`invalid_values` of their row."""
        return {who: invalid_values(row, self.scenario) for who, row in self.copies.items()}


def left_out(measure: Measure, rows: Iterable[RatedRow]) -> list[str]:
    """The ratings of ``measure`` left out because they are outside the field's domain, one phrase
    each (``"seg row 4 Dana: ann's intensity 6.5 is not a whole number 0-10"``), in row order."""
    out = []
    for r in rows:
        for who, per in sorted(r.invalid.items()):
            for key, why in per.get(measure.name, {}).items():
                out.append(f"{r.segment} row {r.position}{f' {key}' if key else ''}: {who}'s {why}")
    return out


@dataclass(frozen=True)
class HumanReview:
    """One human review of a draft row (for the change rate): ``changed``: field -> whether the human
    value differs from the draft, for every field of either (:func:`changed_fields`)."""

    segment: str
    scenario: str
    changed: dict[str, bool]


def changed_fields(draft: dict[str, Any], value: dict[str, Any]) -> dict[str, bool]:
    """field -> whether a stored row (JSON) differs from its draft there (as JSON: ``3`` -> ``3.0`` is
    a change; a missing key differs from ``null``), for every field of either."""
    return {f: (dumps(draft[f]) if f in draft else None) != (dumps(value[f]) if f in value else None) for f in {*draft, *value}}


def _rated(measure: Measure, rows: Iterable[RatedRow]) -> Iterator[Rated]:
    """``(row, unit key within the row, annotator -> value)`` of every unit of ``measure`` that counts
    (see the module docstring)."""
    for r in rows:
        per_rater = {who: values[measure.name] for who, values in r.values.items()}
        keys = sorted({k for values in per_rater.values() for k in values})
        if measure.unit == "row":
            keys = [""]
        for key in keys:
            ratings = {who: values[key] for who, values in per_rater.items() if key in values}
            if measure.kind == "nominal" and all(v == NONE for v in ratings.values()):
                continue
            yield r, key, ratings


Rated = tuple[RatedRow, str, dict[str, Hashable]]
"""A unit of a measure as :func:`_rated` gives it: its row, its key within the row, the ratings."""


def _units(rated: Iterable[Rated]) -> list[Unit]:
    return [Unit(r.segment, ratings, f"{r.segment} row {r.position}" + (f" {key}" if key else "")) for r, key, ratings in rated]


def units(measure: Measure, rows: Iterable[RatedRow]) -> list[Unit]:
    """The units of a label or intensity measure (see the module docstring for what counts)."""
    return _units(_rated(measure, rows))


@dataclass(frozen=True)
class Disagreement:
    """A unit whose annotators gave different values: where it is and what each gave."""

    segment: str
    scenario: str
    position: int
    unit: str
    """The client or the (source -> target) pair within the row; empty for a row measure."""
    values: dict[str, str]
    """annotator -> value, as the page shows it."""


def disagreements(measure: Measure, rows: Iterable[RatedRow]) -> list[Disagreement]:
    """The units of ``measure`` that two or more annotators rated differently (texts compared as
    exact match compares them), in row order: the rows behind a low agreement value."""
    return [
        Disagreement(r.segment, r.scenario, r.position, key, {who: str(v) for who, v in sorted(ratings.items())})
        for r, key, ratings in _rated(measure, rows)
        if _differ(measure, ratings)
    ]


def _differ(measure: Measure, ratings: dict[str, Hashable]) -> bool:
    """Two or more annotators rated the unit, not alike (texts as exact match compares them)."""
    return len(ratings) >= 2 and len({normalise_text(str(v)) if measure.kind == "text" else v for v in ratings.values()}) > 1


def normalise_text(text: str) -> str:
    """What exact match compares: case and runs of spacing ignored."""
    return " ".join(text.split()).casefold()


def text_pairs(measure: Measure, rows: Iterable[RatedRow]) -> list[tuple[str, str, str]]:
    """``(segment, text a, text b)`` for every two annotators who both wrote a text for one unit."""
    return _text_pairs(units(measure, rows))


def _text_pairs(found: Iterable[Unit]) -> list[tuple[str, str, str]]:
    out = []
    for u in found:
        for a, b in combinations(sorted(u.ratings), 2):
            out.append((u.cluster, str(u.ratings[a]), str(u.ratings[b])))
    return out


def change_counts(reviews: Iterable[HumanReview], fields: Sequence[str] = EDITABLE_FIELDS) -> dict[str, tuple[int, int]]:
    """field -> (reviewed rows, rows whose human value differs from the draft)."""
    rows, changed = 0, dict.fromkeys(fields, 0)
    for r in reviews:
        rows += 1
        for f, differs in r.changed.items():
            if differs and f in changed:
                changed[f] += 1
    return {f: (rows, k) for f, k in changed.items()}


# ------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------


def _scopes(rows: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    present = [s for s in SCENARIOS if any(r.scenario == s for r in rows)]
    return [(s, [r for r in rows if r.scenario == s]) for s in present] + [(ALL, list(rows))]


def _mean_ci(records: list[tuple[str, float]], n_resamples: int, confidence: float, seed: int) -> tuple[float | None, list[float] | None]:
    if not records:
        return None, None
    values = [v for _, v in records]
    mean = sum(values) / len(values)
    if n_resamples <= 0 or len({c for c, _ in records}) < 2:
        return mean, None
    low, high = bootstrap_ci(records, mean_statistic(lambda r: r[1]), cluster_key=lambda r: r[0], n_resamples=n_resamples, confidence=confidence, seed=seed)
    return mean, None if math.isnan(low) else [low, high]


PAIR_CACHE_SIZE = 200_000
"""BERTScore F1 values kept per process, per pair of texts: after a save only the pairs not seen
before are scored (the model scores about a hundred pairs a second on a laptop's CPU)."""
_pair_scores: OrderedDict[tuple[str, str], float] = OrderedDict()
_pair_lock = threading.Lock()


def _similarities(pairs: Sequence[tuple[str, str, str]], use_bertscore: bool) -> tuple[list[float] | None, str | None]:
    """BERTScore F1 of each pair (``None`` and why, when not computed). Each distinct pair of texts is
    scored once per process (:data:`PAIR_CACHE_SIZE`); identical texts score 1 without running the
    model (their F1 is 1 up to rounding)."""
    if not use_bertscore:
        return None, "BERTScore switched off"
    if not pairs:
        return [], None
    from rescue_bench.bertscore import BertScoreUnavailable, bertscore_f1

    wanted = sorted({(a, b) for _, a, b in pairs if a != b})
    with _pair_lock:
        known = {pair: _pair_scores[pair] for pair in wanted if pair in _pair_scores}
    todo = [pair for pair in wanted if pair not in known]
    try:
        scored = dict(zip(todo, bertscore_f1([a for a, _ in todo], [b for _, b in todo]))) if todo else {}
    except BertScoreUnavailable as exc:
        return None, str(exc)
    with _pair_lock:
        for pair in wanted:
            _pair_scores[pair] = known[pair] if pair in known else scored[pair]
            _pair_scores.move_to_end(pair)
        while len(_pair_scores) > PAIR_CACHE_SIZE:
            _pair_scores.popitem(last=False)
    scores = {**known, **scored}
    return [1.0 if a == b else scores[(a, b)] for _, a, b in pairs], None


Number = int | float
"""A statistic as computed (passed through: never turned from an int into a float)."""


class Settings(BaseModel):
    resamples: int
    confidence: Number
    seed: int


class FieldAgreement(BaseModel):
    """Agreement on one measure in one scope (:class:`rescue_bench.metrics.agreement.Reliability`)."""

    field: str
    label: str
    scope: str
    level: str
    units: int
    ratings: int
    segments: int
    raters: list[str]
    alpha: Number | None
    alpha_ci: list[Number] | None
    cohen_kappa: Number | None
    cohen_ci: list[Number] | None
    fleiss_kappa: Number | None
    fleiss_ci: list[Number] | None
    notes: list[str]
    disagreements: int
    left_out: int = 0
    """Ratings left out because they are outside the field's domain (each named in ``notes``)."""


class TextAgreement(BaseModel):
    """Free-text similarity of one field in one scope: exact matches and BERTScore F1 (``note``: why it is missing)."""

    field: str
    label: str
    scope: str
    pairs: int
    segments: int
    exact: Number | None
    exact_ci: list[Number] | None
    bertscore: Number | None
    bertscore_ci: list[Number] | None
    note: str | None
    disagreements: int


class ChangeRate(BaseModel):
    """How often human reviews changed a field of the draft, in one scope."""

    field: str
    scope: str
    rows: int
    changed: int
    rate: Number | None


class AgreementReport(BaseModel):
    """The report of :func:`agreement_report` (``rescue review agreement --json``, ``GET /api/agreement``)."""

    segments: int
    rows: int
    annotators: list[str]
    settings: Settings
    fields: list[FieldAgreement]
    text: list[TextAgreement]
    changes: list[ChangeRate]
    notes: list[str]


def agreement_report(
    rows: Sequence[RatedRow],
    reviews: Sequence[HumanReview],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    use_bertscore: bool = True,
) -> AgreementReport:
    """Agreement per measure and scope, text similarity, and change rates."""
    compared = [r for r in rows if len(r.copies) >= 2]
    report = AgreementReport(
        segments=len({r.segment for r in compared}),
        rows=len(compared),
        annotators=sorted({who for r in compared for who in r.copies}),
        settings=Settings(resamples=n_resamples, confidence=confidence, seed=seed),
        fields=[],
        text=[],
        changes=[],
        notes=[],
    )
    if not compared:
        report.notes.append("no row was reviewed by two or more annotators in independent copies yet")
    scenario_of = {r.segment: r.scenario for r in compared}
    scopes = [scope for scope, _ in _scopes(compared)]

    def within(rated: list[Rated], scope: str) -> list[Rated]:
        return rated if scope == ALL else [u for u in rated if u[0].scenario == scope]

    for measure in MEASURES:
        rated = list(_rated(measure, compared))  # once per measure; each scope is a subset
        if measure.kind == "text":
            # scored once over every scope's pairs (the scenario scopes are subsets of "all")
            pairs = _text_pairs(_units(rated))
            sims, note = _similarities(pairs, use_bertscore)
            for scope in scopes:
                chosen = [i for i, p in enumerate(pairs) if scope == ALL or scenario_of[p[0]] == scope]
                exact = [(pairs[i][0], float(normalise_text(pairs[i][1]) == normalise_text(pairs[i][2]))) for i in chosen]
                share, share_ci = _mean_ci(exact, n_resamples, confidence, seed)
                bert, bert_ci = (None, None) if sims is None else _mean_ci([(pairs[i][0], sims[i]) for i in chosen], n_resamples, confidence, seed)
                report.text.append(
                    TextAgreement(
                        field=measure.name, label=measure.label, scope=scope, pairs=len(chosen),
                        segments=len({pairs[i][0] for i in chosen}), exact=share, exact_ci=share_ci,
                        bertscore=bert, bertscore_ci=bert_ci, note=note,
                        disagreements=sum(_differ(measure, u[2]) for u in within(rated, scope)),
                    )
                )
            continue
        level: Level = "nominal" if measure.kind == "nominal" else "interval"
        for scope, rows_of_scope in _scopes(compared):
            scoped = within(rated, scope)
            result = reliability(_units(scoped), level, n_resamples=n_resamples, confidence=confidence, seed=seed)
            dropped = left_out(measure, rows_of_scope)
            if dropped:
                shown = "; ".join(dropped[:3]) + (f"; and {len(dropped) - 3} more" if len(dropped) > 3 else "")
                result.notes.append(f"{len(dropped)} rating(s) left out, outside the field's domain: {shown}")
            report.fields.append(
                FieldAgreement(
                    field=measure.name, label=measure.label, scope=scope, **result.to_json(),
                    disagreements=sum(_differ(measure, u[2]) for u in scoped), left_out=len(dropped),
                )
            )
    for scope, of_scope in _scopes(list(reviews)):
        for name, (n, changed) in change_counts(of_scope).items():
            report.changes.append(ChangeRate(field=name, scope=scope, rows=n, changed=changed, rate=changed / n if n else None))
    return report


# ------------------------------------------------------------------------------------------------
# reading the database
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Read:
    """What the report needs of one stored row value: its row and measures (annotator copies) and
    which fields differ from the draft."""

    row: Row | None
    measured: dict[str, dict[str, Hashable]] | None
    changed: dict[str, bool]


READ_CACHE_SIZE = 20_000
"""Row values kept read per process, by (database, value id, version): every write raises a value's
version (the report's cache key rests on it too), so after a save only that row is read again."""
_reads: OrderedDict[tuple[str, int, int, str], _Read] = OrderedDict()
_reads_lock = threading.Lock()


def _read(key: tuple[str, int, int, str], kind: str, scenario: str, draft_json: str, value_json: str | None) -> _Read:
    with _reads_lock:
        found = _reads.get(key)
    if found is not None:
        return found
    draft = json.loads(draft_json)
    value = json.loads(value_json) if value_json is not None else draft
    changed = changed_fields(draft, value) if value_json is not None else {}  # never saved: the draft as it is
    row = Row.model_validate(value) if kind == "annotator" else None
    read = _Read(row, measure_values(row, scenario) if row is not None else None, changed)
    with _reads_lock:
        _reads[key] = read
        while len(_reads) > READ_CACHE_SIZE:
            _reads.popitem(last=False)
    return read


def collect(session: Session, *, include_discarded: bool = False) -> tuple[list[RatedRow], list[HumanReview]]:
    """The reviewed rows of every annotator copy (grouped per row), and every human review of a draft.

    Human reviews: the reviewed rows of annotator copies, and of final copies of shared segments
    (the final copy of an independent segment holds adjudications, not reviews of the draft).
    """
    query = (
        select(
            Segment.sample_id, Segment.scenario, Segment.review_mode, Copy.kind, User.username, SegmentRow.position,
            RowValue.id, RowValue.version, SegmentRow.draft_json, RowValue.value_json,
        )
        .join(Copy, Copy.segment_id == Segment.id)
        .join(RowValue, RowValue.copy_id == Copy.id)
        .join(SegmentRow, SegmentRow.id == RowValue.row_id)
        .outerjoin(User, User.id == Copy.owner_id)
        .where(RowValue.reviewed)
        .order_by(Segment.position, SegmentRow.position, User.username)
    )
    if not include_discarded:
        query = query.where(Segment.status != "discarded")
    database = str(session.get_bind().engine.url)
    grouped: dict[tuple[str, int], RatedRow] = {}
    reviews: list[HumanReview] = []
    for sample_id, scenario, mode, kind, username, position, value_id, version, draft_json, value_json in session.execute(query):
        if kind != "annotator" and mode != "shared":
            continue  # the final copy of an independent segment: adjudications, not reviews
        read = _read((database, value_id, version, scenario), kind, scenario, draft_json, value_json)
        reviews.append(HumanReview(sample_id, scenario, read.changed))
        if read.row is not None and read.measured is not None:
            item = grouped.setdefault((sample_id, position), RatedRow(sample_id, scenario, position, {}))
            item.copies[username or "?"] = read.row
            item.measured[username or "?"] = read.measured
    return list(grouped.values()), reviews


def preload() -> None:
    """Import what the report needs and nothing else in the app does (the krippendorff package:
    a second or more on a busy machine), so the first agreement page does not wait for it. The app
    calls it in a worker thread at start."""
    import krippendorff  # noqa: F401


CACHE_SIZE = 16
"""Reports kept per process (different settings or databases); the oldest is dropped first."""
_cache: OrderedDict[tuple[Any, ...], AgreementReport] = OrderedDict()
_cache_lock = threading.Lock()


def state_of(session: Session) -> tuple[Any, ...]:
    """A fingerprint of everything the report reads: every value's version (a save, a review or an
    adjudication raises one), the copies and segments (modes, overlap), the newest audit entry and the
    segments' statuses. Cheap aggregates, so a page load after nothing changed costs milliseconds."""
    values = session.execute(select(func.count(RowValue.id), func.coalesce(func.sum(RowValue.version), 0))).one()
    copies = session.execute(select(func.count(Copy.id), func.coalesce(func.max(Copy.id), 0))).one()
    segments = session.execute(select(func.count(Segment.id), func.count(Segment.id).filter(Segment.status == "discarded"))).one()
    last = session.execute(select(func.coalesce(func.max(AuditEntry.id), 0))).scalar_one()
    return (str(session.get_bind().engine.url), *values, *copies, *segments, last)


def _key(session: Session, n_resamples: int, confidence: float, seed: int, use_bertscore: bool) -> tuple[Any, ...]:
    return (state_of(session), n_resamples, confidence, seed, use_bertscore)


def cached_report(
    session: Session, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0, use_bertscore: bool = True
) -> AgreementReport | None:
    """:func:`database_report` if it is already computed for this state of the database and these
    settings, else ``None`` (nothing is computed)."""
    return _lookup(_key(session, n_resamples, confidence, seed, use_bertscore))


def _lookup(key: tuple[Any, ...]) -> AgreementReport | None:
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    return None


def database_report(
    session: Session, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0, use_bertscore: bool = True
) -> AgreementReport:
    """:func:`agreement_report` of everything in the database (settings as there), computed once per
    state of the database (:func:`state_of`) and settings: the agreement page recomputes its bootstrap
    only after something changed. The cached report is shared: callers must not modify it."""
    found = cached_report(session, n_resamples=n_resamples, confidence=confidence, seed=seed, use_bertscore=use_bertscore)
    if found is not None:
        return found
    key = _key(session, n_resamples, confidence, seed, use_bertscore)
    rows, reviews = collect(session)
    if n_resamples <= 0 and not use_bertscore:  # the point estimates: light, never queued behind a full report
        report = agreement_report(rows, reviews, n_resamples=0, confidence=confidence, seed=seed, use_bertscore=False)
    else:
        with _compute_lock:
            report = _lookup(key) or _full_report(rows, reviews, n_resamples=n_resamples, confidence=confidence, seed=seed, use_bertscore=use_bertscore)
    with _cache_lock:
        _cache[key] = report
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return report


_compute_lock = threading.Lock()
"""One full report at a time per process: a second request for the same state waits, then finds it."""


def _full_report(rows: Sequence[RatedRow], reviews: Sequence[HumanReview], **settings: Any) -> AgreementReport:
    """:func:`agreement_report` with BLAS and OpenMP (numpy's, torch's) on one thread: its matrices
    are small, so more threads only contend for the CPUs the app's requests run on (measured on a
    busy 2-CPU machine: the demo's full report 1.1 s with them, 0.45 s without)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return agreement_report(rows, reviews, **settings)


__all__ = [
    "ALL",
    "AgreementReport",
    "MEASURES",
    "NONE",
    "Disagreement",
    "HumanReview",
    "Measure",
    "RatedRow",
    "agreement_report",
    "change_counts",
    "cached_report",
    "collect",
    "database_report",
    "disagreements",
    "invalid_values",
    "left_out",
    "measure_values",
    "normalise_text",
    "state_of",
    "text_pairs",
    "units",
]
