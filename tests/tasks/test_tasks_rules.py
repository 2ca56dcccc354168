"""Every edge of every construction rule (SPEC sections 3-4), on hand-made clips."""

from __future__ import annotations

import pytest

from rescue_bench.data.models import Emotion, Row
from rescue_bench.tasks import BuildOptions, build_all, instance_counts, project_row
from rescue_bench.tasks.er import build_er, integer_intensity, skipped_rows, speaker_emotion
from rescue_bench.tasks.itp import build_itp
from rescue_bench.tasks.rpp import build_rpp
from rescue_bench.tasks.ssp import build_ssp
from rescue_bench.tasks.stp import build_stp
from rescue_bench.tasks.vp import build_vp
from tests.factories import FIVE_WORDS, FOUR_WORDS, T, clip, emo, row, strat, therapist, view

OPT = BuildOptions()


def rows_of(instances):
    return [i.row for i in instances]


def ctx(inst):
    return [v.row_index for v in inst.context]


def speakers_clip(*speakers, **kwargs):
    return clip([row(s) for s in speakers], **kwargs)


# =================================================================================================
# ITP
# =================================================================================================


class TestITP:
    def test_many_per_class_balanced_evenly(self):
        # boundaries after row k: 1 A>B neg, 2 B>T pos, 4 A>A neg, 5 A>B neg, 6 B>T pos
        c = speakers_clip("Ann", "Bob", T, "Ann", "Ann", "Bob", T)
        got = build_itp(c, OPT)
        # n = min(2, 3) = 2; negatives [1, 4, 5] -> indices 0 and 2 -> rows 1 and 5
        assert [(i.row, i.gold) for i in got] == [(1, "no"), (2, "yes"), (5, "no"), (6, "yes")]

    def test_one_per_class_takes_the_middle(self):
        # pos [1]; neg [3, 4, 5] -> L = 1 -> index 3 // 2 = 1 -> row 4
        c = speakers_clip("Ann", T, "Ann", "Bob", "Ann", "Bob")
        assert [(i.row, i.gold) for i in build_itp(c, OPT)] == [(1, "yes"), (4, "no")]
        # two negatives [3, 4]: index 2 // 2 = 1 -> the upper middle, row 4
        c = speakers_clip("Ann", T, "Ann", "Bob", "Ann")
        assert [(i.row, i.gold) for i in build_itp(c, OPT)] == [(1, "yes"), (4, "no")]

    def test_more_positives_than_negatives_thins_the_positives(self):
        # pos after rows 1, 3, 5, 7, 9; neg after row 11 only -> n = 1, middle positive = row 5
        c = speakers_clip("Ann", T, "Bob", T, "Ann", T, "Bob", T, "Ann", T, "Bob", "Ann")
        got = build_itp(c, OPT)
        assert [(i.row, i.gold) for i in got] == [(5, "yes"), (11, "no")]

    def test_many_picks_use_the_even_indices(self):
        # 10 positives (Ann, T) pairs then 12 negatives: n = 10, negatives thinned from 12 to 10
        speakers = [s for _ in range(10) for s in ("Ann", T)] + ["Bob"] * 13
        c = speakers_clip(*speakers)
        got = build_itp(c, OPT)
        yes = [i.row for i in got if i.gold == "yes"]
        no = [i.row for i in got if i.gold == "no"]
        assert yes == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19]
        negatives = list(range(21, 33))  # boundaries after rows 21..32
        # round(r * 11 / 9) for r in 0..9 = 0,1,2,4,5,6,7,9,10,11
        assert no == [negatives[i] for i in (0, 1, 2, 4, 5, 6, 7, 9, 10, 11)]
        assert len(yes) == len(no) == 10

    @pytest.mark.parametrize(
        "speakers",
        [
            (),
            ("Ann",),
            ("Ann", "Bob", "Ann"),  # negatives only
            ("Ann", T, T, "Bob", T),  # positives only
            (T, T, T),
            ("Ann", T),
        ],
    )
    def test_clips_with_n_zero_give_nothing(self, speakers):
        assert build_itp(speakers_clip(*speakers), OPT) == []

    def test_clips_with_n_zero_are_dropped_from_the_counts(self):
        kept = speakers_clip("Ann", T, "Ann", "Bob", sample_id="g/kept")
        dropped = speakers_clip("Ann", "Bob", "Ann", sample_id="g/dropped")
        built = build_all([dropped, kept], ["itp"])
        assert {i.sample_id for i in built["itp"]} == {"g/kept"}
        (couple, family) = instance_counts(built)
        assert (couple.instances, couple.clips, family.instances, family.clips) == (2, 1, 0, 0)

    def test_group_and_unnamed_speakers_count_as_not_therapist(self):
        # 1 Couple>T pos; 3 Ann>Couple neg
        c = clip([row("Couple"), therapist(), row("Ann"), row("Couple")])
        assert [(i.row, i.gold) for i in build_itp(c, OPT)] == [(1, "yes"), (3, "no")]
        # a row with no speaker is "not Therapist" too
        c = clip([row(None), therapist(), row(""), row("Family")], scenario="family")
        assert [(i.row, i.gold) for i in build_itp(c, OPT)] == [(1, "yes"), (3, "no")]

    def test_context_shows_rows_up_to_k_and_never_the_next_turn(self):
        c = speakers_clip("Ann", "Bob", "Ann", "Bob", T, "Ann", "Bob")
        for inst in build_itp(c, OPT):
            assert ctx(inst)[-1] == inst.row
            assert ctx(inst) == list(range(max(1, inst.row - 2), inst.row + 1))
            assert inst.current is None and inst.candidates == ["yes", "no"]
        all_rows = build_itp(c, OPT.with_context(-1))
        assert all(ctx(i) == list(range(1, i.row + 1)) for i in all_rows)
        assert all(ctx(i) == [] for i in build_itp(c, OPT.with_context(0)))

    def test_ids_do_not_name_the_answer(self):
        c = speakers_clip("Ann", T, "Ann", "Bob", sample_id="pos_neg_yes_no/clip")
        for inst in build_itp(c, OPT):
            assert not any(word in inst.id for word in ("pos", "neg", "yes", "no", "clip"))
            shown = inst.model_input().model_dump(exclude_none=True)
            assert "gold" not in shown and inst.gold not in shown.values()


# =================================================================================================
# RPP
# =================================================================================================


class TestRPP:
    def test_states(self):
        c = clip(
            [
                row("Ann"),
                therapist(relation_cycle_state="pursue_withdraw"),  # 2 kept
                therapist(relation_cycle_state=None),  # 3 null
                therapist(relation_cycle_state=""),  # 4 "" = no clear pattern
                therapist(relation_cycle_state="   "),  # 5 blank
                therapist(),  # 6 missing
                therapist(relation_cycle_state="chaos"),  # 7 out of taxonomy
                therapist(relation_cycle_state="Attack_Attack"),  # 8 not the exact name
                therapist(relation_cycle_state="escalation_conflict"),  # 9 a family label in a couple clip
                therapist(relation_cycle_state=" attack_attack "),  # 10 padded: kept, stripped
                row("Ann", relation_cycle_state="attack_attack"),  # 11 client row: not an RPP row
                row("Couple", relation_cycle_state="attack_attack"),  # 12 group speaker
            ]
        )
        got = build_rpp(c, OPT)
        assert [(i.row, i.gold) for i in got] == [(2, "pursue_withdraw"), (10, "attack_attack")]
        assert got[0].candidates == [
            "pursue_withdraw", "attack_attack", "withdraw_withdraw",
            "repair_softening", "constructive_alignment", "mixed_transition",
        ]

    def test_family_labels(self):
        c = clip(
            [
                row("Ann"),
                therapist(relation_cycle_state="cooperative_family_alliance"),
                therapist(relation_cycle_state="constructive_alignment"),  # couple-only label
                therapist(relation_cycle_state="pursue_withdraw"),  # in both sets
            ],
            scenario="family",
        )
        got = build_rpp(c, OPT)
        assert [(i.row, i.gold) for i in got] == [(2, "cooperative_family_alliance"), (4, "pursue_withdraw")]
        assert len(got[0].candidates) == 8 and got[0].candidates[0] == "escalation_conflict"

    def test_context_is_all_previous_rows_never_the_therapist_row(self):
        rows = [row("Ann"), row("Bob")] * 3 + [therapist(relation_cycle_state="attack_attack")]
        (inst,) = build_rpp(clip(rows), OPT)
        assert inst.row == 7 and ctx(inst) == [1, 2, 3, 4, 5, 6]
        (inst,) = build_rpp(clip(rows), OPT.with_context(2))
        assert ctx(inst) == [5, 6]
        (inst,) = build_rpp(clip(rows), OPT.with_context(0))
        assert ctx(inst) == []
        (inst,) = build_rpp(clip([therapist(relation_cycle_state="attack_attack")]), OPT)
        assert inst.row == 1 and ctx(inst) == []

    def test_client_patterns_option(self):
        c = clip(
            [
                row("Ann", relation_pattern="attack_attack", relation_cycle_state="withdraw_withdraw"),  # 1
                row("Bob", relation_pattern="not_a_label"),  # 2
                row("Couple", relation_pattern="attack_attack"),  # 3 group: not a client
                therapist(relation_cycle_state="pursue_withdraw", relation_pattern="mixed_transition"),  # 4
                row("Bob", relation_pattern=None),  # 5
                row("Ann", relation_pattern="escalation_conflict"),  # 6 family-only
            ]
        )
        assert [(i.row, i.gold) for i in build_rpp(c, OPT)] == [(4, "pursue_withdraw")]
        on = BuildOptions(rpp_include_client_patterns=True)
        got = build_rpp(c, on)
        assert [(i.row, i.gold) for i in got] == [(1, "attack_attack"), (4, "pursue_withdraw")]
        assert ctx(got[0]) == []  # a client row's own turn is not shown either


# =================================================================================================
# STP / SSP
# =================================================================================================


def _stp_case(strategies, row_target=None, scenario="couple"):
    fields = {"support_strategy": strategies}
    if row_target is not None:
        fields["target"] = row_target
    return clip([row("Ann"), therapist(**fields)], scenario=scenario)


class TestSTP:
    @pytest.mark.parametrize(
        ("strategies", "row_target", "scenario", "want"),
        [
            ([strat("track", ["Ann"])], None, "couple", "Ann"),
            ([strat("track", ["Ann", "Bob"])], None, "couple", "Couple"),
            ([strat("track", ["Ann", "Bob"])], None, "family", "Family"),
            ([strat("track", ["Ann", "Bob", "Cyd"])], None, "family", "Family"),
            ([strat("track", ["Ann", "Therapist"])], None, "couple", "Ann"),  # Therapist removed
            ([strat("track", ["Couple"])], None, "couple", "Couple"),
            ([strat("track", ["Couple", "Ann"])], None, "couple", "Couple"),
            ([strat("track", [" Bob ", ""])], None, "couple", "Bob"),
            ([strat("track", ["Ann", "Ann"])], None, "couple", "Ann"),  # one person named twice
            ([strat("track", [])], ["Bob"], "couple", "Bob"),  # fallback to the row target
            ([strat("track", None)], ["Bob"], "couple", "Bob"),  # null strategy target
            ([strat("track")], ["Ann", "Bob"], "couple", "Couple"),  # missing target, group from row
            ([strat("track", ["", "  "])], ["Ann"], "couple", "Ann"),  # only empty names
            ([strat("track", ["Therapist"])], ["Bob", "Therapist"], "couple", "Bob"),
            ([strat("track", ["Ann"])], ["Bob"], "couple", "Ann"),  # the strategy's target wins
            ([strat("not_a_strategy", ["Ann"])], None, "couple", "Ann"),  # any non-empty type
            ([strat("track", ["Ann"]), strat("", ["Bob"])], None, "couple", "Ann"),  # first item only
        ],
    )
    def test_targets(self, strategies, row_target, scenario, want):
        (inst,) = build_stp(_stp_case(strategies, row_target, scenario), OPT)
        assert (inst.row, inst.gold) == (2, want)
        assert "Therapist" not in inst.candidates and want in inst.candidates

    @pytest.mark.parametrize(
        ("strategies", "row_target"),
        [
            ([], ["Ann"]),  # no strategy
            (None, ["Ann"]),
            ([strat("", ["Ann"])], None),  # strategy_type empty
            ([strat(None, ["Ann"])], None),
            ([strat("   ", ["Ann"])], None),
            ([strat("", ["Ann"]), strat("track", ["Ann"])], None),  # only the first item counts
            ([strat("track", [])], None),  # unresolvable
            ([strat("track", ["Therapist"])], ["Therapist"]),
            ([strat("track", [""])], [""]),
            ([strat("track")], []),
        ],
    )
    def test_dropped(self, strategies, row_target):
        assert build_stp(_stp_case(strategies, row_target), OPT) == []
        assert build_ssp(_stp_case(strategies, row_target), OPT) == []

    def test_only_therapist_rows(self):
        c = clip([row("Ann", support_strategy=[strat("track", ["Bob"])]), row("Couple", support_strategy=[strat("track", ["Bob"])])])
        assert build_stp(c, OPT) == [] and build_ssp(c, OPT) == []

    def test_context_never_shows_the_therapist_row(self):
        rows = [row("Ann"), row("Bob"), row("Ann"), row("Bob"), therapist(support_strategy=[strat("track", ["Ann"])])]
        (stp,) = build_stp(clip(rows), OPT)
        (ssp,) = build_ssp(clip(rows), OPT)
        assert ctx(stp) == ctx(ssp) == [2, 3, 4]
        assert ctx(build_stp(clip(rows), OPT.with_context(-1))[0]) == [1, 2, 3, 4]
        assert ctx(build_ssp(clip(rows), OPT.with_context(0))[0]) == []

    def test_candidates_are_clip_level(self):
        rows = [
            row("Ann"),
            therapist(support_strategy=[strat("track", ["Ann"])]),
            therapist(support_strategy=[strat("track", ["Bob"])]),
        ]
        a, b = build_stp(clip(rows), OPT)
        assert a.candidates == b.candidates == ["Ann", "Bob", "Couple"]


class TestSSP:
    def test_out_of_set_strategy_dropped_but_stp_kept(self):
        c = clip(
            [
                row("Ann"),
                therapist(support_strategy=[strat("track", ["Ann", "Bob"])]),  # 2 kept
                therapist(support_strategy=[strat("hug", ["Ann"])]),  # 3 out of taxonomy
                therapist(support_strategy=[strat("boundary", ["Bob"])]),  # 4 family-only strategy
                therapist(support_strategy=[strat("Track", ["Bob"])]),  # 5 not the exact name
                therapist(support_strategy=[strat(" goal_align ", ["Bob"])]),  # 6 padded
            ]
        )
        stp = build_stp(c, OPT)
        ssp = build_ssp(c, OPT)
        assert rows_of(stp) == [2, 3, 4, 5, 6]
        assert [(i.row, i.gold, i.support_target) for i in ssp] == [(2, "track", "Couple"), (6, "goal_align", "Bob")]
        assert ssp[0].candidates == [
            "track", "reframe", "evoke", "enact", "join", "detach", "repair", "counterbalance", "safeguard", "goal_align",
        ]

    def test_family_strategies(self):
        c = clip(
            [
                row("Ann"),
                therapist(support_strategy=[strat("boundary", ["Cyd"])]),
                therapist(support_strategy=[strat("goal_align", ["Cyd"])]),  # couple-only
                therapist(support_strategy=[strat("evoke", ["Ann", "Cyd"])]),  # couple-only
            ],
            scenario="family",
        )
        assert rows_of(build_stp(c, OPT)) == [2, 3, 4]
        assert [(i.row, i.gold, i.support_target) for i in build_ssp(c, OPT)] == [(2, "boundary", "Cyd")]

    def test_ssp_is_told_the_stp_gold(self):
        c = clip([row("Ann"), therapist(support_strategy=[strat("join", ["Bob"])])])
        (stp,) = build_stp(c, OPT)
        (ssp,) = build_ssp(c, OPT)
        assert ssp.support_target == stp.gold == "Bob"
        assert ssp.model_input().model_dump(exclude_none=True)["support_target"] == "Bob"
        assert "support_target" not in stp.model_input().model_dump(exclude_none=True)


# =================================================================================================
# ER
# =================================================================================================


def _er_rows(n, **kwargs):
    """n client rows, each eligible for ER apart from its position."""
    return [row("Ann" if i % 2 == 0 else "Bob", FIVE_WORDS, internal_emotion=[emo("Ann" if i % 2 == 0 else "Bob", f"feeling{i + 1}", 5)], **kwargs) for i in range(n)]


class TestER:
    @pytest.mark.parametrize(
        ("n", "skip", "rows"),
        [
            (1, 0, [1]),  # ceil(0.3) = 1 but at most T - 1 = 0 dropped
            (2, 1, [2]),  # ceil(0.6) = 1
            (3, 1, [2, 3]),  # ceil(0.9) = 1
            (4, 2, [3, 4]),  # ceil(1.2) = 2
            (10, 3, [4, 6, 7, 8, 10]),  # ceil(3.0) = 3; 7 eligible rows 4..10 -> indices 0,2,3,4,6
        ],
    )
    def test_early_skip(self, n, skip, rows):
        assert skipped_rows(n, 0.3) == skip
        assert rows_of(build_er(clip(_er_rows(n)), OPT)) == rows

    def test_skip_counts_all_rows_of_the_clip(self):
        # T = 7 (3 therapist rows + 4 eligible client rows): skip ceil(2.1) = 3
        c = clip([therapist(), therapist(), *_er_rows(2), therapist(), *_er_rows(2)])
        assert rows_of(build_er(c, OPT)) == [4, 6, 7]

    def test_four_versus_five_words(self):
        rows = [therapist()] * 4 + [
            row("Ann", FOUR_WORDS, internal_emotion=[emo("Ann")]),  # 5: 4 words
            row("Ann", FIVE_WORDS, internal_emotion=[emo("Ann")]),  # 6: 5 words
            row("Ann", "I don't know this", internal_emotion=[emo("Ann")]),  # 7: don't = 1 word -> 4
            row("Ann", "my well-being is gone", internal_emotion=[emo("Ann")]),  # 8: well-being = 2 -> 5
            row("Ann", "no, no, no, no!", internal_emotion=[emo("Ann")]),  # 9: 4
            row("Ann", "no, no, no, no, no", internal_emotion=[emo("Ann")]),  # 10: 5
            row("Ann", None, internal_emotion=[emo("Ann")]),  # 11: no text
        ]
        assert rows_of(build_er(clip(rows), OPT)) == [6, 8, 10]
        # with 4 words, rows 5..10 qualify (6 > 5): round(r * 5 / 4) = 0, 1, 2 (2.5), 4, 5
        assert rows_of(build_er(clip(rows), BuildOptions(er_min_words=4))) == [5, 6, 7, 9, 10]

    def test_first_matching_item_is_the_gold(self):
        items = [
            emo("Bob", "other person", 5),
            emo("Therapist", "therapist", 5),
            emo("Ann", "", 5),
            emo("Ann", None, 5),
            emo("Ann", "   ", 5),
            emo("Ann", "too strong", 11),
            emo("Ann", "negative", -1),
            emo("Ann", "half", 7.5),
            emo("Ann", "no intensity", None),
            emo(None, "nobody", 5),
            emo(" Ann ", " the gold ", 6),
            emo("Ann", "later", 8),
        ]
        c = clip([therapist()] * 3 + [row("Ann", FIVE_WORDS, internal_emotion=items)])
        (inst,) = build_er(c, OPT)
        assert inst.gold == {"emotion": "the gold", "intensity": 6}
        assert inst.client == "Ann" and inst.row == 4

    @pytest.mark.parametrize("intensity", [0, 10, 7.0])
    def test_integer_intensities_in_range(self, intensity):
        c = clip([therapist()] * 3 + [row("Ann", FIVE_WORDS, internal_emotion=[emo("Ann", "tense", intensity)])])
        (inst,) = build_er(c, OPT)
        assert inst.gold["intensity"] == int(intensity) and isinstance(inst.gold["intensity"], int)

    @pytest.mark.parametrize("value", [11, -1, 7.5, "7", True, None, 10.5])
    def test_non_integer_or_out_of_range_intensities(self, value):
        assert integer_intensity(value) is None
        # strings and bools cannot get past the strict loader; the builder skips them all the same
        r = Row(primary_speaker="Ann", dialogue_cleaned=FIVE_WORDS, internal_emotion=[Emotion.model_construct(person="Ann", emotion_description="x", intensity=value)])
        assert speaker_emotion(r) is None

    def test_string_intensity_is_a_load_error_not_a_silent_skip(self):
        from pydantic import ValidationError

        with pytest.raises(ValidationError):
            clip([row("Ann", FIVE_WORDS, internal_emotion=[emo("Ann", "x", "7")])])

    def test_clients_only(self):
        c = clip(
            [therapist()] * 3
            + [
                therapist(FIVE_WORDS, internal_emotion=[emo("Therapist")]),
                row("Couple", FIVE_WORDS, internal_emotion=[emo("Couple")]),
                row("", FIVE_WORDS, internal_emotion=[emo("")]),
                row("Ann", FIVE_WORDS, internal_emotion=[emo("Ann")]),
            ]
        )
        assert rows_of(build_er(c, OPT)) == [7]

    def test_at_most_five_evenly(self):
        c = clip([therapist()] * 4 + _er_rows(8))  # T = 12, skip 4, eligible rows 5..12
        got = build_er(c, OPT)
        # round(r * 7 / 4) = 0, 2 (1.75), 4 (3.5 half-even), 5 (5.25), 7
        assert rows_of(got) == [5, 7, 9, 10, 12]
        assert rows_of(build_er(c, BuildOptions(er_max_per_clip=1))) == [9]  # middle of 8: index 4

    def test_context_and_current(self):
        c = clip([therapist()] * 4 + _er_rows(2))
        got = build_er(c, OPT)
        assert [(i.row, ctx(i), i.current.row_index) for i in got] == [(5, [2, 3, 4], 5), (6, [3, 4, 5], 6)]
        assert ctx(build_er(c, OPT.with_context(-1))[0]) == [1, 2, 3, 4]
        assert ctx(build_er(c, OPT.with_context(0))[0]) == []
        assert got[0].current.text == FIVE_WORDS


# =================================================================================================
# VP
# =================================================================================================


class TestVP:
    def test_gold_is_every_own_viewpoint_with_target_and_text(self):
        items = [
            view("Bob", "Ann", "someone else's"),
            view("Ann", "", "no target"),
            view("Ann", None, "no target"),
            view("Ann", "Bob", ""),
            view("Ann", "Bob", None),
            view(" Ann ", " Bob ", " guarded "),
            view("Ann", "Therapist", "hopeful", attitude="warm"),
            view("Ann", "Couple", "tired of us"),
        ]
        (inst,) = build_vp(clip([row("Ann", viewpoints_attitudes=items)]), OPT)
        assert inst.gold == [
            {"source": "Ann", "target": "Bob", "viewpoint": "guarded"},
            {"source": "Ann", "target": "Therapist", "viewpoint": "hopeful"},
            {"source": "Ann", "target": "Couple", "viewpoint": "tired of us"},
        ]
        assert inst.client == "Ann" and inst.current.row_index == 1 and inst.context == []

    def test_rows_without_a_usable_item_or_not_clients(self):
        c = clip(
            [
                row("Ann", viewpoints_attitudes=[view("Bob", "Ann")]),
                row("Ann", viewpoints_attitudes=[]),
                row("Ann", viewpoints_attitudes=None),
                therapist(viewpoints_attitudes=[view("Therapist", "Ann")]),
                row("Couple", viewpoints_attitudes=[view("Couple", "Ann")]),
                row("Bob", FOUR_WORDS, viewpoints_attitudes=[view("Bob", "Ann")]),  # no word minimum
            ]
        )
        assert rows_of(build_vp(c, OPT)) == [6]

    def test_no_early_skip_and_at_most_five_evenly(self):
        rows = [row("Ann", "a", viewpoints_attitudes=[view("Ann", "Bob")]) for _ in range(7)]
        assert rows_of(build_vp(clip(rows), OPT)) == [1, 3, 4, 5, 7]  # 0, 1.5->2, 3, 4.5->4, 6
        assert rows_of(build_vp(clip(rows[:5]), OPT)) == [1, 2, 3, 4, 5]
        assert rows_of(build_vp(clip(rows), BuildOptions(vp_max_per_clip=2))) == [1, 7]

    def test_context_and_current(self):
        rows = [therapist()] * 5 + [row("Bob", viewpoints_attitudes=[view("Bob", "Ann")])]
        (inst,) = build_vp(clip(rows), OPT)
        assert (inst.row, ctx(inst), inst.current.row_index) == (6, [3, 4, 5], 6)
        assert ctx(build_vp(clip(rows), OPT.with_context(-1))[0]) == [1, 2, 3, 4, 5]


# =================================================================================================
# Cue modes
# =================================================================================================

FULL_ROW = row(
    "Ann",
    " what was said ",
    target=["Bob", ""],
    background_dialogue=[
        {"speaker": "Bob", "target": ["Ann"], "content": "overlap"},
        {"speaker": "Bob", "target": [], "content": ""},
    ],
    tone_of_voice="shaky",
    body_posture=[{"person": "Ann", "description": "leans back"}, {"person": "Bob", "description": ""}],
    facial_expressions=[{"person": "Ann", "description": "frowns"}],
    self_directed_behavior=[{"person": "Ann", "description": "rubs hands"}],
    interaction_behavior=[{"initiator": "Ann", "target": ["Bob"], "description": "points"}],
    utterance_type="accusation",
    internal_emotion=[emo("Ann", "SECRET-EMOTION", 7)],
    viewpoints_attitudes=[view("Ann", "Bob", "SECRET-VIEW")],
    support_strategy=[strat("track", ["Bob"], strategy_content="SECRET-STRATEGY")],
    relation_cycle_state="attack_attack",
    relation_pattern="attack_attack",
    relation_pattern_reason="SECRET-REASON",
    relation_pattern_evidence_rows=[1],
    relation_cycle_reason="SECRET-UNKNOWN-FIELD",
)

DIALOGUE_KEYS = {"row_index", "speaker", "target", "text", "background"}
VISUAL_KEYS = {"posture", "face", "self_directed", "interaction"}


class TestModes:
    @pytest.mark.parametrize(
        ("mode", "keys"),
        [
            ("dialogue", DIALOGUE_KEYS),
            ("audio", DIALOGUE_KEYS | {"tone"}),
            ("visual", DIALOGUE_KEYS | VISUAL_KEYS),
            ("audiovisual", DIALOGUE_KEYS | {"tone"} | VISUAL_KEYS),
        ],
    )
    def test_exactly_the_listed_fields(self, mode, keys):
        r = clip([FULL_ROW]).rows[0]
        view_ = project_row(r, 1, mode).model_dump(exclude_none=True)
        assert set(view_) == keys
        assert view_["speaker"] == "Ann" and view_["text"] == "what was said" and view_["target"] == ["Bob"]
        assert view_["background"] == [{"speaker": "Bob", "target": ["Ann"], "content": "overlap"}]
        if "tone" in keys:
            assert view_["tone"] == "shaky"
        if "posture" in keys:
            assert view_["posture"] == [{"person": "Ann", "description": "leans back"}]
            assert view_["face"] == [{"person": "Ann", "description": "frowns"}]
            assert view_["self_directed"] == [{"person": "Ann", "description": "rubs hands"}]
            assert view_["interaction"] == [{"initiator": "Ann", "target": ["Bob"], "description": "points"}]
        assert "SECRET" not in str(view_) and "accusation" not in str(view_) and "attack" not in str(view_)

    def test_missing_cues_stay_empty(self):
        r = clip([row("Ann", "hi")]).rows[0]
        v = project_row(r, 1, "audiovisual")
        assert v.tone is None and v.posture == [] and v.face == [] and v.interaction == []
        assert project_row(r, 1, "dialogue").tone is None

    def test_unknown_mode(self):
        with pytest.raises(ValueError, match="unknown cue mode"):
            project_row(clip([row("Ann")]).rows[0], 1, "video")  # type: ignore[arg-type]

    @pytest.mark.parametrize("mode", ["dialogue", "audio", "visual", "audiovisual"])
    def test_builders_use_the_mode_everywhere(self, mode):
        rows = [FULL_ROW] * 3 + [
            therapist(relation_cycle_state="attack_attack", support_strategy=[strat("track", ["Bob"])]),
            {**FULL_ROW, "dialogue_cleaned": FIVE_WORDS},
            therapist(),
        ]
        built = build_all([clip(rows)], options=BuildOptions(mode=mode))
        assert all(built[t] for t in ("itp", "rpp", "stp", "ssp", "er", "vp"))
        for items in built.values():
            for inst in items:
                assert inst.mode == mode
                blob = str(inst.model_input().model_dump(exclude_none=True))
                assert "SECRET" not in blob
                assert ("shaky" in blob) == (mode in ("audio", "audiovisual"))
                assert ("frowns" in blob) == (mode in ("visual", "audiovisual"))


# =================================================================================================
# Options and counts
# =================================================================================================


def test_context_option_applies_to_every_task():
    opts = BuildOptions().with_context(-1)
    assert all(opts.window(t) == -1 for t in ("itp", "rpp", "stp", "ssp", "er", "vp"))
    assert BuildOptions().with_context(None) == BuildOptions()
    assert BuildOptions().window("rpp") == -1 and BuildOptions().window("itp") == 3


def test_instance_counts_are_per_task_and_scenario():
    couple = clip([row("Ann"), therapist(relation_cycle_state="attack_attack")], sample_id="c/1")
    family = clip([row("Ann"), therapist(relation_cycle_state="mixed_transition")] * 2, scenario="family", sample_id="f/1")
    rows = instance_counts(build_all([couple, family], ["rpp"]))
    assert [(r.task, r.scenario, r.instances, r.clips, r.paper_instances, r.paper_clips) for r in rows] == [
        ("rpp", "couple", 1, 1, 1608, 172),
        ("rpp", "family", 2, 1, 525, 17),
    ]
    assert not any(r.matches for r in rows)
