"""rescue_bench.parse.matching: normalising labels and matching them to the candidates."""

from __future__ import annotations

import pytest

from rescue_bench import labels
from rescue_bench.parse import (
    ALIASES,
    match_label,
    normalize_label,
)
from tests.parse.cases import COUPLE_P, COUPLE_S, COUPLE_T, FAMILY_P, FAMILY_S, FAMILY_T


class TestLabels:
    @pytest.mark.parametrize(
        "raw, norm",
        [
            ("pursue_withdraw", "pursue_withdraw"),
            ("Pursue-Withdraw", "pursue_withdraw"),
            ("  pursue  withdraw ", "pursue_withdraw"),
            ("pursue__-__withdraw", "pursue_withdraw"),
            ("PURSUE \u2013 WITHDRAW", "pursue_withdraw"),
            ('"track".', "track"),
            ("**goal_align**", "goal_align"),
            ("`join`", "join"),
            ("", ""),
            ("___", ""),
        ],
    )
    def test_normalize(self, raw, norm):
        assert normalize_label(raw) == norm

    def test_normalize_non_string(self):
        assert normalize_label(None) == ""
        assert normalize_label(3) == ""

    @pytest.mark.parametrize(
        "value, expected",
        [
            ("pursue_withdraw", "pursue_withdraw"),
            ("Pursue Withdraw", "pursue_withdraw"),
            ("ATTACK-ATTACK", "attack_attack"),
            ("mixed transition", "mixed_transition"),
            ("1. repair_softening", "repair_softening"),
            ("- withdraw_withdraw", "withdraw_withdraw"),
            ("constructive_alignment: both partners listen", "constructive_alignment"),
            ("attack_attack (both blame)", "attack_attack"),
            ("pursuer-distancer", "pursue_withdraw"),
            ("pursue distance", "pursue_withdraw"),
            ("demand-withdraw", "pursue_withdraw"),
            ("pursue", None),
            ("pursue_withdraws", None),
            ("attack", None),
            ("", None),
            ("cross_generational_coalition", None),  # a family label is not a couple label
        ],
    )
    def test_match_couple_patterns(self, value, expected):
        assert match_label(value, COUPLE_P) == expected

    def test_aliases_only_to_candidates(self):
        assert match_label("goal alignment", COUPLE_S) == "goal_align"
        assert match_label("goal-aligning", COUPLE_S) == "goal_align"
        assert match_label("goal alignment", FAMILY_S) is None
        assert match_label("boundaries", FAMILY_S) == "boundary"
        assert match_label("Boundary making", FAMILY_S) == "boundary"
        assert match_label("boundaries", COUPLE_S) is None

    def test_group_aliases(self):
        assert match_label("both", COUPLE_T) == "Couple"
        assert match_label("The couple", COUPLE_T) == "Couple"
        assert match_label("couple", COUPLE_T) == "Couple"
        assert match_label("everyone", COUPLE_T) == "Couple"
        assert match_label("the family", FAMILY_T) == "Family"
        assert match_label("Everyone", FAMILY_T) == "Family"
        assert match_label("all", FAMILY_T) == "Family"
        assert match_label("both", FAMILY_T) is None  # two of several members are not the family

    def test_names_ignore_case(self):
        assert match_label("alan", COUPLE_T) == "Alan"
        assert match_label("EVELYN", COUPLE_T) == "Evelyn"
        assert match_label("mary ann", FAMILY_T) == "Mary-Ann"
        assert match_label("Therapist", COUPLE_T) is None

    def test_aliases_can_be_disabled_or_replaced(self):
        assert match_label("pursuer distancer", COUPLE_P, aliases={}) is None
        assert match_label("chasing", COUPLE_P, aliases={"chasing": "pursue_withdraw"}) == "pursue_withdraw"

    def test_alias_dict_is_normalised_and_targets_are_real_labels(self):
        every_label = set(COUPLE_P) | set(FAMILY_P) | set(COUPLE_S) | set(FAMILY_S) | set(labels.GROUP_LABELS.values())
        for key, target in ALIASES.items():
            assert key == normalize_label(key)
            for t in (target,) if isinstance(target, str) else target:
                assert t in every_label, t

    def test_non_string_value(self):
        assert match_label(None, COUPLE_P) is None
        assert match_label(["track"], COUPLE_S) is None
        assert match_label("track", []) is None

    def test_huge_value(self):
        assert match_label("track: " + "x" * 100_000, COUPLE_S) == "track"
        assert match_label("x" * 100_000, COUPLE_S) is None
