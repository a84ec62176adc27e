"""cupel.conversation.Conversation: units, turns, the providers' rule, window checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import ConfigurationError
from cupel.conversation import Conversation


def units(conversation: Conversation) -> list[tuple[tuple[int, ...], str | None]]:
    return [(u.messages, u.problem) for u in conversation.units]


def test_an_assistant_message_with_calls_and_its_results_are_one_unit() -> None:
    c = Conversation(
        ["user", "assistant", "tool", "tool", "assistant"],
        calls={1: ["a", "b"]},
        answers={2: "b", 3: "a"},  # any order within the run
    )
    assert units(c) == [((0,), None), ((1, 2, 3), None), ((4,), None)]
    assert c.is_exchange(1) and not c.is_exchange(0)
    assert [u.role for u in c.units] == ["user", "assistant", "assistant"]


@pytest.mark.parametrize(
    ("roles", "calls", "answers", "expected"),
    [
        # unanswered: the next message comes before any result
        (["assistant", "user"], {0: ["a"]}, {}, [((0,), "unanswered_calls"), ((1,), None)]),
        # unanswered at the end of the history
        (["user", "assistant"], {1: ["a"]}, {}, [((0,), None), ((1,), "unanswered_calls")]),
        # partial: one of two answered
        (
            ["assistant", "tool", "user"],
            {0: ["a", "b"]},
            {1: "a"},
            [((0, 1), "partial_answers"), ((2,), None)],
        ),
        # late: the result comes after another message
        (
            ["assistant", "user", "tool"],
            {0: ["a"]},
            {2: "a"},
            [((0,), "unanswered_calls"), ((1,), None), ((2,), "late_result")],
        ),
        # duplicate: a second result for an answered call
        (
            ["assistant", "tool", "tool"],
            {0: ["a"]},
            {1: "a", 2: "a"},
            [((0, 1), None), ((2,), "duplicate_result")],
        ),
        # unknown: a result for a call nobody made, inside a valid run
        (
            ["assistant", "tool", "tool"],
            {0: ["a"]},
            {1: "x", 2: "a"},
            [((0, 2), None), ((1,), "unknown_result")],
        ),
        # a tool result at the very start
        (["tool", "user"], {}, {0: "a"}, [((0,), "unknown_result"), ((1,), None)]),
        # id-less calls are answered by id-less results (legacy function calling)
        (["assistant", "tool"], {0: [None]}, {1: None}, [((0, 1), None)]),
        (["assistant", "tool"], {0: [""]}, {}, [((0, 1), None)]),
        # ... but an id-less result does not answer a call with an id
        (
            ["assistant", "tool"],
            {0: ["a"]},
            {1: None},
            [((0,), "unanswered_calls"), ((1,), "unknown_result")],
        ),
        # the same id reused in a later round is a new call
        (
            ["assistant", "tool", "user", "assistant", "tool"],
            {0: ["c0"], 3: ["c0"]},
            {1: "c0", 4: "c0"},
            [((0, 1), None), ((2,), None), ((3, 4), None)],
        ),
        # two calls with one id need two results
        (
            ["assistant", "tool", "tool"],
            {0: ["a", "a"]},
            {1: "a", 2: "a"},
            [((0, 1, 2), None)],
        ),
    ],
)
def test_the_providers_rule(
    roles: list[str],
    calls: dict[int, list[str | None]],
    answers: dict[int, str | None],
    expected: list[tuple[tuple[int, ...], str | None]],
) -> None:
    assert units(Conversation(roles, calls=calls, answers=answers)) == expected


def test_problems_name_the_message_and_the_calls() -> None:
    c = Conversation(
        ["assistant", "tool", "user", "tool"], calls={0: ["a", "b"]}, answers={1: "a", 3: "b"}
    )
    assert c.problems() == [
        "message 0: tool call(s) ['b'] are unanswered (partial_answers)",
        "message 3: tool result for 'b' arrives after another message came between it and "
        "its call (late_result)",
    ]
    assert [c.unit(k).tool_call_ids for k in c.invalid_units] == [("b",), ("b",)]


def test_turns_start_at_each_user_message_and_the_latest_user_is_known() -> None:
    c = Conversation(["system", "assistant", "user", "assistant", "user", "assistant"])
    assert [c.turn(k) for k in range(len(c))] == [0, 0, 1, 1, 2, 2]
    assert c.latest_user == 4 and c.first_message(c.latest_user) == 4
    assert Conversation(["assistant"]).latest_user == -1


def test_roles_must_be_a_sequence() -> None:
    with pytest.raises(ConfigurationError) as raised:
        Conversation("user")  # type: ignore[arg-type]
    assert raised.value.field == "roles"


def test_unknown_roles_are_ordinary_messages() -> None:
    c = Conversation(["user", "narrator", "assistant"])
    assert units(c) == [((0,), None), ((1,), None), ((2,), None)]
    assert c.role(1) == "narrator"


# -- check_window -------------------------------------------------------------------------
CHAT = Conversation(
    ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"],
    calls={4: ["c"]},
    answers={5: "c"},
)


@pytest.mark.parametrize(
    ("kept", "holes"),
    [
        ({0, 7}, ()),
        ({0, 3, 4, 5, 6, 7}, ()),
        ({0, 1, 2, 3, 4, 5, 6, 7}, ()),
        (
            {0, 2, 3, 4, 5, 6, 7},
            ("message 2 (assistant) is kept without the start of its turn (message 1)",),
        ),
        ({0, 1, 2, 7}, ("messages 3-6 are left out between kept messages",)),
        ({0, 3, 7}, ("messages 4-6 are left out between kept messages",)),
        ({0, 1, 2}, ("the newest messages (3-7) are left out while older ones are kept",)),
    ],
)
def test_check_window_finds_holes(kept: set[int], holes: tuple[str, ...]) -> None:
    assert CHAT.check_window(kept).holes == holes


def test_the_task_and_a_stretch_after_it_is_the_one_allowed_gap() -> None:
    run = Conversation(
        ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"],
        calls={2: ["a"], 4: ["b"], 6: ["c"]},
        answers={3: "a", 5: "b", 7: "c"},
    )
    check = run.check_window({0, 1, 6, 7})
    assert check.holes == () and check.problems == () and check.task_kept and check.ok
    assert run.check_window({0, 6, 7}).task_kept is False
    assert run.check_window({0, 1, 4, 5}).holes  # the newest round left out
    assert run.check_window({0, 1, 5, 6, 7}).problems  # a result without its call


def test_check_window_reports_reply_empty_and_validity() -> None:
    assert CHAT.check_window({0, 7}).has_reply is False
    assert CHAT.check_window({0, 3, 4, 5, 6, 7}).has_reply is True
    assert CHAT.check_window({0}).empty and not CHAT.check_window({0, 7}).empty
    assert CHAT.check_window({0, 5, 6, 7}).problems == (
        "message 1: tool result for 'c' answers no call made just before it (unknown_result)",
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    roles=st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), max_size=12),
    data=st.data(),
)
def test_every_message_belongs_to_exactly_one_unit(roles: list[str], data: st.DataObject) -> None:
    calls = {
        i: data.draw(st.lists(st.sampled_from(["a", "b", None]), max_size=2))
        for i, role in enumerate(roles)
        if role == "assistant"
    }
    answers = {
        i: data.draw(st.sampled_from(["a", "b", None]))
        for i, role in enumerate(roles)
        if role == "tool"
    }
    c = Conversation(roles, calls=calls, answers=answers)
    seen = sorted(i for k in range(len(c)) for i in c.messages_of(k))
    assert seen == list(range(len(roles)))
    # the valid units, sent alone in order, are a valid sequence
    valid = sorted(i for k in range(len(c)) if c.problem(k) is None for i in c.messages_of(k))
    assert Conversation.of_window(c, valid).problems() == []


def test_a_conversation_copies_and_pickles_as_its_structure() -> None:
    """Copies and pickles (a memory holding its last selection is deep-copied, say) give
    the same structure; a shallow copy of the read-only object is the object."""
    import copy
    import pickle

    conversation = Conversation(
        ["system", "user", "assistant", "tool", "tool", "user"],
        calls={2: ["c1"]},
        answers={3: "c1", 4: "c1"},
    )
    assert copy.copy(conversation) is conversation
    for other in (copy.deepcopy(conversation), pickle.loads(pickle.dumps(conversation))):
        assert other is not conversation
        assert other.unit_firsts == conversation.unit_firsts
        assert dict(other.unit_members) == dict(conversation.unit_members) == {2: (2, 3)}
        assert dict(other.unit_problems) == dict(conversation.unit_problems) != {}
        assert other.latest_user == conversation.latest_user == 4  # a unit index
