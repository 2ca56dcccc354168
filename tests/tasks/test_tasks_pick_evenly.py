"""pick_evenly against hand-computed values (SPEC section 3), and word_count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rescue_bench.tasks import pick_evenly, word_count
from tests.tasks.task_oracle import spread


@pytest.mark.parametrize(
    ("n", "limit", "want"),
    [
        (0, 0, []),
        (0, 3, []),
        (3, 0, []),
        (2, 5, [0, 1]),  # at most L: keep all
        (5, 5, [0, 1, 2, 3, 4]),
        (1, 1, [0]),
        (2, 1, [1]),  # L = 1: the middle item, n // 2
        (3, 1, [1]),
        (9, 1, [4]),
        (10, 1, [5]),
        (3, 2, [0, 2]),
        (6, 5, [0, 1, 2, 4, 5]),  # r*5/4 = 0, 1.25, 2.5, 3.75, 5 -> 2.5 rounds to 2 (half to even)
        (7, 5, [0, 2, 3, 4, 6]),  # 0, 1.5, 3, 4.5, 6 -> 1.5 -> 2, 4.5 -> 4
        (8, 5, [0, 2, 4, 5, 7]),  # 0, 1.75, 3.5, 5.25, 7 -> 3.5 -> 4
        (10, 5, [0, 2, 4, 7, 9]),  # 0, 2.25, 4.5, 6.75, 9
        (11, 5, [0, 2, 5, 8, 10]),  # 0, 2.5, 5, 7.5, 10 -> 2.5 -> 2, 7.5 -> 8
        (12, 3, [0, 6, 11]),  # 5.5 -> 6
        (14, 3, [0, 6, 13]),  # 6.5 -> 6
        (100, 4, [0, 33, 66, 99]),
    ],
)
def test_hand_values(n, limit, want):
    assert pick_evenly(list(range(n)), limit) == want


def test_keeps_input_order_and_items():
    items = ["e", "d", "c", "b", "a", "z", "y"]
    assert pick_evenly(items, 3) == ["e", "b", "y"]
    assert pick_evenly(tuple(items), 10) == items


@given(st.lists(st.integers(), max_size=60), st.integers(min_value=0, max_value=12))
def test_matches_the_spec_reading(items, limit):
    got = pick_evenly(items, limit)
    assert got == spread(items, limit)
    assert len(got) == min(len(items), limit)
    # a subsequence: positions strictly increasing
    positions = []
    start = 0
    for value in got:
        start = items.index(value, start) if value in items[start:] else -1
        assert start >= 0
        positions.append(start)
        start += 1
    if len(items) > limit >= 2:
        assert got[0] == items[0] and got[-1] == items[-1]


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("", 0),
        ("don't", 1),
        ("well-being", 2),
        ("I don't really know", 4),
        ("I do not really know", 5),
        ("my well-being is gone", 5),
        ("  hello,   world!!! ... 42 times  ", 4),
        ("caf\u00e9 na\u00efve", 3),  # non-ASCII letters split words: caf, na, ve
        ("it\u2019s", 2),  # a curly apostrophe is not in the class
    ],
)
def test_word_count(text, n):
    assert word_count(text) == n
