"""``--query`` on the command line: a relevance scorer ranks by it; a chat transcript's
latest user message is the query when none is given; a relevance scorer without any
query, or a query nothing uses, is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import assert_one_line_error, cupel, run, write_items, write_jsonl

ITEMS = [
    {"content": "The invoice for March was paid late.", "tokens": 10},
    {"content": "Our cat Miso sleeps in cardboard boxes.", "tokens": 10},
    {"content": "Deploys run every Tuesday.", "tokens": 10},
]

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "My cat is called Miso and she loves boxes."},
    {"role": "assistant", "content": "What a nice name."},
    {"role": "user", "content": "Remind me when deploys run."},
    {"role": "assistant", "content": "Deploys run every Tuesday."},
    {"role": "user", "content": "Thanks. What is my cat called again?"},
]


def test_select_ranks_by_the_query(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "10", "--scorer", "relevance",
        "--query", "which cats sleep in boxes?",
    )  # fmt: skip
    assert status == 0, err
    assert [item["content"] for item in json.loads(out)] == [ITEMS[1]["content"]]
    assert "relevance to 'which cats sleep in boxes?' (--query)" in err


def test_a_transcript_queries_by_its_latest_user_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path, CHAT, "chat.jsonl")
    flags = ("--max-tokens", "40", "--scorer", "relevance:3", "--scorer", "recency")
    status, out, err = run(capsys, "select", str(path), *flags)
    assert status == 0, err
    contents = [message["content"] for message in json.loads(out)]
    assert CHAT[1]["content"] in contents  # the old turn about the cat came back
    assert "Remind me when deploys run." not in contents
    assert "(the latest user message)" in err
    status, out, err = run(capsys, "select", str(path), *flags, "--query", "deploys")
    assert status == 0, err
    contents = [message["content"] for message in json.loads(out)]
    assert "Deploys run every Tuesday." in contents and CHAT[1]["content"] not in contents


def test_a_policy_file_with_an_unbound_relevance_scorer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "recall.toml"
    policy.write_text('[scorer]\ntype = "relevance"\nk1 = 1.5\n', encoding="utf-8")
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "10", "--policy", str(policy),
        "--query", "invoice", "--report", "json",
    )  # fmt: skip
    assert status == 0, err
    assert [item["content"] for item in json.loads(out)["window"]] == [ITEMS[0]["content"]]
    status, out, err = run(
        capsys, "explain", str(path), "--max-tokens", "10", "--policy", str(policy)
    )
    assert_one_line_error(status, out, err, "needs a query", "--query TEXT")


@pytest.mark.parametrize("command", ["select", "explain", "min-budget"])
def test_a_relevance_scorer_without_a_query_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = write_items(tmp_path, ITEMS)
    extra = ["--item", "Deploys"] if command == "min-budget" else ["--max-tokens", "10"]
    status, out, err = run(capsys, command, str(path), *extra, "--scorer", "relevance")
    assert_one_line_error(status, out, err, "the relevance scorer needs a query", "--query")


def test_a_transcript_without_a_user_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path, [{"role": "system", "content": "Hi."}], "chat.jsonl")
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "40", "--scorer", "relevance"
    )
    assert_one_line_error(status, out, err, "the transcript has no user message")


def test_a_query_nothing_uses_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "10", "--query", "cats")
    assert_one_line_error(status, out, err, "--query applies only with a relevance scorer")
    status, out, err = run(
        capsys, "compare", str(path), "--max-tokens", "10", "--policy", "chat", "--policy",
        "rag", "--query", "cats",
    )  # fmt: skip
    assert_one_line_error(status, out, err, "--query applies only when a policy has")


def test_demo_and_compare_take_a_query(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, err = run(capsys, "demo", "--scorer", "relevance", "--scorer", "recency")
    assert status == 0, err
    assert "(the latest user message)" in out
    policy = tmp_path / "recall.json"
    policy.write_text(json.dumps({"scorer": {"type": "relevance"}}), encoding="utf-8")
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(
        capsys, "compare", str(path), "--max-tokens", "10", "--policy", "chat",
        "--policy", str(policy), "--query", "deploys", "--report", "json",
    )  # fmt: skip
    assert status == 0, err
    variants = json.loads(out)["variants"]
    assert [i["item"]["content"] for i in variants[1]["report"]["included"]] == [
        ITEMS[2]["content"]
    ]


def test_the_real_entry_point(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    done = cupel(
        "select", str(path), "--max-tokens", "10", "--scorer", "relevance", "--query", "invoices"
    )
    assert done.returncode == 0, done.stderr
    assert [item["content"] for item in json.loads(done.stdout)] == [ITEMS[0]["content"]]
