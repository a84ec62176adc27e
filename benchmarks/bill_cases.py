"""The provider-bill benchmark's cases: seeded chat and agent histories, and document sets,
whose content is what a provider prices differently from a characters-per-token guess.

Histories (:func:`generate_case`, one of :data:`FLAVORS`) mix English prose, Chinese and
Japanese text, JSON and code tool outputs, images (inline PNG / JPEG with real headers
built here byte by byte, and http URLs of unknown size), invalid tool calls, ``name``
fields, many short messages and some long single ones. Each is converted to LangChain
(:func:`to_langchain`: content blocks, ``tool_calls`` / ``invalid_tool_calls``,
``ToolMessage``; AI messages carry the ``usage_metadata`` a provider would have reported)
and to LlamaIndex (:func:`to_llamaindex`: ``TextBlock`` / ``ImageBlock``, calls as
``ToolCallBlock`` s or OpenAI-style ``additional_kwargs["tool_calls"]``, tool results with
``additional_kwargs["tool_call_id"]``). The generator keeps the side table the oracle
prices images with (:attr:`Case.images`: image bytes -> width, height).

The budget is 20-80% of the history's bill (:func:`neutral_bill`, the same figure the
oracle gives both conversions), and at least 110% of what every window must hold (the
system prompt, the latest user message and the reply), so a window within the budget
always exists.

Document sets (:func:`generate_documents`, one of :data:`DOCUMENT_FLAVORS`) are 8-40
passages of prose, CJK, JSON or code with relevance scores, as LangChain ``Document`` s
and LlamaIndex ``NodeWithScore`` s; their budget is 20-80% of their bill.

>>> bill = Bill()
>>> case = generate_case("image chat", 0, seed=7, bill=bill)
>>> case == generate_case("image chat", 0, seed=7, bill=bill)
True
>>> bill.add_images(case.images)
>>> bill.langchain(to_langchain(case, bill)) == bill.llamaindex(to_llamaindex(case)) == case.bill
True
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.bill import REPLY, UNKNOWN_IMAGE, Bill, image_tokens
from benchmarks.window_cases import _VOCABULARY, Call, langchain_calls

__all__ = [
    "DOCUMENT_FLAVORS",
    "FLAVORS",
    "Call",
    "Case",
    "DocumentCase",
    "Image",
    "Message",
    "Passage",
    "Text",
    "generate_case",
    "generate_cases",
    "generate_documents",
    "jpeg",
    "neutral_bill",
    "png",
    "to_langchain",
    "to_llamaindex",
    "to_nodes",
]

FLAVORS = (
    "prose chat",
    "cjk chat",
    "image chat",
    "short chat",
    "json agent",
    "code agent",
    "long agent",
    "mixed agent",
)
"""The history flavors, in table order: what dominates each history."""

DOCUMENT_FLAVORS = ("prose docs", "cjk docs", "json docs", "code docs", "mixed docs")
"""The document-set flavors, in table order."""

TOOLS = ("search", "read_file", "run_tests", "query_db", "fetch_page")


# -- images ------------------------------------------------------------------------------------
def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, padding: bytes = b"") -> bytes:
    """A PNG with a valid signature and ``IHDR`` (8-bit RGB, ``width`` x ``height``), a
    ``tEXt`` chunk holding ``padding`` and ``IEND``; no pixel data."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"tEXt", b"Comment\x00" + padding)
        + _png_chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int, padding: bytes = b"") -> bytes:
    """A JPEG with ``SOI``, a JFIF ``APP0``, a baseline ``SOF0`` frame header (8-bit,
    three components, ``width`` x ``height``), a comment holding ``padding`` and ``EOI``;
    no scan data."""
    app0 = b"JFIF\x00\x01\x01\x00" + struct.pack(">HH", 1, 1) + b"\x00\x00"
    sof0 = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return (
        b"\xff\xd8"
        + b"\xff\xe0"
        + struct.pack(">H", len(app0) + 2)
        + app0
        + b"\xff\xc0"
        + struct.pack(">H", len(sof0) + 2)
        + sof0
        + b"\xff\xfe"
        + struct.pack(">H", len(padding) + 2)
        + padding
        + b"\xff\xd9"
    )


IMAGE_SIZES = (
    (64, 64),
    (256, 256),
    (512, 384),
    (800, 600),
    (1024, 768),
    (1280, 720),
    (1920, 1080),
    (2560, 1440),
    (1170, 2532),
    (3024, 4032),
    (4032, 3024),
    (600, 2400),
    (3000, 600),
)
"""Icons, screenshots, phone photos, a tall receipt, a wide banner."""


# -- the neutral history -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Text:
    """A text part and what it holds: ``prose``, ``cjk``, ``json``, ``code``, ``short``."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An image part: inline ``data`` (PNG or JPEG bytes) or an http ``url`` (size unknown
    to the provider's bill); ``block`` is how a LangChain message carries it
    (``"image_url"``: OpenAI's form; ``"image"``: LangChain's standard block)."""

    width: int
    height: int
    data: bytes | None
    url: str | None
    detail: str | None
    block: Literal["image_url", "image"]
    mime: str = "image/png"

    def data_url(self) -> str:
        assert self.data is not None
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode()}"


Part = Text | Image


@dataclass(frozen=True, slots=True)
class Message:
    """A neutral message: ``role`` is system / user / assistant / tool; an assistant may
    make ``calls`` (:class:`~benchmarks.window_cases.Call`, a string ``args`` for an
    invalid one); a tool message ``answers`` a call id; ``name`` is the author's name."""

    role: str
    parts: tuple[Part, ...]
    calls: tuple[Call, ...] = ()
    answers: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Case:
    """One generated history, its budget, its bill and its images' sizes."""

    flavor: str
    number: int
    messages: tuple[Message, ...]
    budget: int
    bill: int
    """The oracle's bill of the whole history (a request holding every message)."""
    call_style: Literal["blocks", "openai"]
    images: Mapping[bytes, tuple[int, int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.flavor} #{self.number}"


def _arguments(call: Call) -> str:
    return call.args if isinstance(call.args, str) else json.dumps(call.args, ensure_ascii=False)


def part_bill(part: Part, bill: Bill) -> int:
    """The oracle's price of one neutral part."""
    if isinstance(part, Text):
        return bill.text(part.text)
    if part.data is None:
        return UNKNOWN_IMAGE
    return image_tokens(part.width, part.height, part.detail)


def message_bill(message: Message, bill: Bill) -> int:
    """The oracle's price of one neutral message (the same as of either conversion)."""
    total = 3 + sum(part_bill(p, bill) for p in message.parts)
    total += sum(bill.call(c.name, _arguments(c), c.id) for c in message.calls)
    if message.answers is not None:
        total += bill.text(message.answers)
    if message.name:
        total += bill.text(message.name)
    return total


def neutral_bill(messages: Sequence[Message], bill: Bill) -> int:
    """The oracle's bill of a request holding ``messages``."""
    return sum(message_bill(m, bill) for m in messages) + REPLY


# -- text --------------------------------------------------------------------------------------
_CHINESE = (
    "我们需要检查服务器的配置文件",
    "这个问题可能和缓存有关",
    "请把最新的测试结果发给我",
    "部署之前要先运行所有的单元测试",
    "数据库查询的速度比上周慢了很多",
    "用户反馈说页面加载时间太长",
    "我觉得应该先优化索引",
    "明天下午三点开会讨论发布计划",
    "日志里出现了很多超时错误",
    "这个版本修复了内存泄漏的问题",
    "请帮我总结一下这份报告的主要内容",
    "北京今天的天气很好",
    "我们的预算还剩下百分之二十",
    "模型的上下文窗口有限",
    "这段代码需要重构",
    "客户希望在月底之前看到新功能",
)
_JAPANESE = (
    "サーバーの設定を確認してください",
    "このエラーはキャッシュが原因かもしれません",
    "明日の会議は午後三時からです",
    "テストの結果を共有していただけますか",
    "データベースの応答が遅くなっています",
    "新しいバージョンをリリースする前に確認が必要です",
    "ログにタイムアウトのエラーがたくさんあります",
    "東京は今日とても暑いです",
    "この関数はもう少し短くできると思います",
    "ユーザーからの問い合わせが増えています",
    "予算の残りはあと二割です",
    "ドキュメントを日本語に翻訳しました",
)
_SHORT = (
    "ok",
    "thanks!",
    "yes",
    "no",
    "go on",
    "sure, do it",
    "why?",
    "got it",
    "hmm",
    "sounds good",
    "and then?",
    "done.",
    "wait",
    "perfect, thank you",
    "好的",
    "はい",
    "lgtm",
    "👍",
)
_STATUSES = ("ok", "failed", "pending", "skipped", "running")


class _Writer:
    """Writes text of about a given number of cl100k tokens, piece by piece (pieces are
    counted on their own: the total is close to, not exactly, the target)."""

    def __init__(self, rng: random.Random, bill: Bill) -> None:
        self.rng = rng
        self.bill = bill

    def _fill(self, tokens: int, piece: Any, sep: str) -> str:
        out: list[str] = []
        count = 0
        while count < max(1, tokens):
            text = piece()
            out.append(text)
            count += self.bill.text(text) + (1 if sep.strip() else 0)
        return sep.join(out)

    def word(self) -> str:
        return self.rng.choice(_VOCABULARY)

    def sentence(self) -> str:
        words = [self.word() for _ in range(self.rng.randint(5, 16))]
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def prose(self, tokens: int) -> str:
        return self._fill(tokens, self.sentence, " ")

    def cjk(self, tokens: int) -> str:
        pool, comma = (_CHINESE, "，") if self.rng.random() < 0.6 else (_JAPANESE, "、")

        def clause() -> str:
            ends = comma if self.rng.random() < 0.6 else "。"
            return self.rng.choice(pool) + ends

        return self._fill(tokens, clause, "")

    def record(self) -> dict[str, Any]:
        rng = self.rng
        return {
            "id": rng.randint(1, 99999),
            "name": f"{self.word()} {self.word()}",
            "status": rng.choice(_STATUSES),
            "score": round(rng.random(), 4),
            "tags": [self.word() for _ in range(rng.randint(0, 4))],
            "updated_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
        }

    def json(self, tokens: int) -> str:
        records: list[dict[str, Any]] = []
        count = 10
        while count < tokens:
            record = self.record()
            records.append(record)
            count += self.bill.text(json.dumps(record))
        indent = 2 if self.rng.random() < 0.5 else None
        payload = {"total": len(records), "page": 1, "results": records}
        return json.dumps(payload, indent=indent)

    def identifier(self) -> str:
        return "_".join(self.word() for _ in range(self.rng.randint(1, 3)))

    def snippet(self) -> str:
        rng = self.rng
        name, arg, other, attr = (self.identifier() for _ in range(4))
        if rng.random() < 0.5:
            return (
                f"def {name}({arg}, {other}=None):\n"
                f'    """{self.sentence()}"""\n'
                f"    result = []\n"
                f"    for item in {arg}:\n"
                f"        if item.{attr} > {rng.randint(0, 500)}:\n"
                f"            result.append(item.{attr} * {rng.randint(2, 9)})\n"
                f"    return sorted(result, key={other})\n"
            )
        return (
            f"export async function {name.title().replace('_', '')}({arg}) {{\n"
            f"  const res = await fetch(`/api/{self.word()}/${{{arg}.id}}`);\n"
            f'  if (!res.ok) throw new Error("{self.sentence()}");\n'
            f"  const data = await res.json();\n"
            f"  return data.{attr}.filter((x) => x.{other} !== null);\n"
            f"}}\n"
        )

    def code(self, tokens: int) -> str:
        return self._fill(tokens, self.snippet, "\n")

    def short(self) -> str:
        return self.rng.choice(_SHORT)

    def of(self, kind: str, tokens: int) -> str:
        if kind == "short":
            return self.short()
        return getattr(self, kind)(tokens)


# -- histories ---------------------------------------------------------------------------------
class _Builder:
    """Appends messages and keeps the images' side table."""

    def __init__(self, rng: random.Random, bill: Bill, flavor: str) -> None:
        self.rng = rng
        self.bill = bill
        self.flavor = flavor
        self.write = _Writer(rng, bill)
        self.messages: list[Message] = []
        self.images: dict[bytes, tuple[int, int]] = {}
        self.calls = 0
        self.user_name = (
            rng.choice([None, "alice", "bob"])
            if flavor
            in (
                "prose chat",
                "mixed agent",
            )
            else None
        )

    def total(self) -> int:
        return neutral_bill(self.messages, self.bill)

    def text(self, kind: str, tokens: int) -> Text:
        return Text(kind, self.write.of(kind, tokens))

    def image(self) -> Image:
        rng = self.rng
        width, height = rng.choice(IMAGE_SIZES)
        detail = rng.choice([None, None, "auto", "high", "low"])
        block: Literal["image_url", "image"] = "image_url" if rng.random() < 0.7 else "image"
        if rng.random() < 0.2:
            url = f"https://images.example.com/{self.write.identifier()}/{rng.randint(1, 9999)}.png"
            return Image(width, height, None, url, detail, block)
        padding = bytes(rng.randrange(256) for _ in range(rng.randint(8, 48)))
        if rng.random() < 0.5:
            data, mime = png(width, height, padding), "image/png"
        else:
            data, mime = jpeg(width, height, padding), "image/jpeg"
        self.images[data] = (width, height)
        return Image(width, height, data, None, detail, block, mime)

    def add(self, role: str, *parts: Part, name: str | None = None) -> None:
        if role == "user":
            name = name or self.user_name
        self.messages.append(Message(role, tuple(parts), name=name))

    def user(self, kind: str, tokens: int, images: int = 0) -> None:
        parts: list[Part] = [self.text(kind, tokens)]
        parts.extend(self.image() for _ in range(images))
        self.add("user", *parts)

    def new_call(self, invalid: bool) -> Call:
        self.calls += 1
        rng = self.rng
        name = rng.choice(TOOLS)
        call_id = f"call_{self.calls:03d}_{rng.randrange(16**6):06x}"
        if invalid:
            broken = rng.choice(['{"query": "unterminated', "{'path': 'src/", '{"n": 3,,}'])
            return Call(call_id, name, broken)
        query = self.write.cjk(8) if rng.random() < 0.15 else self.write.prose(8)[:60]
        return Call(call_id, name, {"query": query, "limit": rng.randint(1, 50)})

    def tool_round(self, result_kind: Any, sizes: tuple[int, int], invalid_rate: float) -> None:
        """An assistant message making 1-3 calls (the first possibly invalid), then the
        results (an invalid call answered by an error, or not at all)."""
        rng = self.rng
        parallel = 1 if rng.random() < 0.6 else rng.randint(2, 3)
        calls = [self.new_call(i == 0 and rng.random() < invalid_rate) for i in range(parallel)]
        parts: tuple[Part, ...] = ()
        if rng.random() < 0.4:
            parts = (self.text("prose", rng.randint(5, 60)),)
        self.messages.append(Message("assistant", parts, tuple(calls)))
        for call in calls:
            if call.invalid:
                if rng.random() < 0.5:
                    error = f"Error: invalid JSON arguments for {call.name}: {call.args}"
                    self.messages.append(
                        Message("tool", (Text("prose", error),), answers=call.id, name=call.name)
                    )
                continue
            kind = result_kind() if callable(result_kind) else result_kind
            result = self.text(kind, rng.randint(*sizes))
            self.messages.append(Message("tool", (result,), answers=call.id, name=call.name))


def _chat(b: _Builder, kind: str, target: int) -> None:
    rng = b.rng
    b.add("system", b.text("prose" if rng.random() < 0.5 else kind, rng.randint(40, 300)))
    while b.total() < target or len(b.messages) < 6:
        images = 0
        if b.flavor == "image chat" and rng.random() < 0.7:
            images = rng.choice([1, 1, 1, 2, 3])
        b.user(kind, rng.randint(10, 200), images)
        if rng.random() < 0.15:
            b.tool_round("json" if rng.random() < 0.5 else "prose", (40, 300), 0.0)
        b.add("assistant", b.text(kind, rng.randint(40, 400)))
    images = 1 if b.flavor == "image chat" and rng.random() < 0.5 else 0
    b.user(kind, rng.randint(10, 120), images)  # the question being answered


def _short_chat(b: _Builder, target: int) -> None:
    rng = b.rng
    b.add("system", b.text("prose", rng.randint(20, 80)))
    role = "user"
    while b.total() < target or len(b.messages) < 30:
        if rng.random() < 0.1:
            b.add(role, b.text("prose", rng.randint(5, 25)))
        else:
            b.add(role, Text("short", b.write.short()))
        role = "assistant" if role == "user" else "user"
    if role == "user":
        b.add("user", Text("short", b.write.short()))


def _agent(b: _Builder, target: int) -> None:
    rng = b.rng
    flavor = b.flavor
    b.add("system", b.text("prose", rng.randint(100, 500)))
    mixed = flavor == "mixed agent"
    kinds = ("prose", "cjk", "json", "code")
    if mixed or rng.random() < 0.3:  # earlier turns of the same session
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(kinds[:2]) if mixed else "prose"
            b.user(kind, rng.randint(10, 150), rng.choice([0, 0, 1]) if mixed else 0)
            b.add("assistant", b.text(kind, rng.randint(20, 250)))
    task_kind = rng.choice(kinds[:2]) if mixed else "prose"
    b.user(task_kind, rng.randint(30, 300), rng.choice([0, 1]) if mixed else 0)  # the task
    if flavor == "json agent":
        result: Any = "json"
    elif flavor == "code agent":
        result = "code"
    else:

        def result() -> str:
            return rng.choice(kinds)

    longs = rng.randint(1, 3) if flavor == "long agent" else 0
    invalid = 0.0 if flavor == "long agent" else 0.12
    rounds = 0
    while b.total() < target or rounds < 3:
        if longs and rng.random() < 0.3:
            b.tool_round(result, (1500, 6000), 0.0)  # a long single tool output
            longs -= 1
        else:
            b.tool_round(result, (30, 700), invalid)
        rounds += 1
    if rng.random() < 0.3:  # the user follows up mid-run
        b.user(task_kind, rng.randint(10, 80))


def generate_case(flavor: str, number: int, *, seed: int, bill: Bill | None = None) -> Case:
    """Case ``number`` of ``flavor`` (one of :data:`FLAVORS`), from ``seed`` alone
    (``bill`` only counts tokens; give one to share its cache)."""
    if flavor not in FLAVORS:
        raise ValueError(f"flavor must be one of {', '.join(FLAVORS)}, got {flavor!r}")
    rng = random.Random(f"bill:{seed}:{flavor}:{number}")
    bill = bill or Bill()
    b = _Builder(rng, bill, flavor)
    if flavor == "short chat":
        _short_chat(b, rng.randint(800, 3000))
    elif flavor.endswith("chat"):
        _chat(b, flavor.split()[0].replace("image", "prose"), rng.randint(2500, 14000))
    else:
        _agent(b, rng.randint(3000, 16000))
    messages = tuple(b.messages)
    total = neutral_bill(messages, bill)
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    pinned = neutral_bill([messages[0], messages[last_user]], bill)
    budget = max(round(total * rng.uniform(0.2, 0.8)), -(-pinned * 11 // 10))
    return Case(
        flavor=flavor,
        number=number,
        messages=messages,
        budget=budget,
        bill=total,
        call_style="blocks" if rng.random() < 0.5 else "openai",
        images=b.images,
    )


def generate_cases(per_flavor: int, *, seed: int, bill: Bill | None = None) -> list[Case]:
    """``per_flavor`` cases of every flavor, flavor by flavor."""
    bill = bill or Bill()
    return [
        generate_case(flavor, number, seed=seed, bill=bill)
        for flavor in FLAVORS
        for number in range(per_flavor)
    ]


# -- conversions -------------------------------------------------------------------------------
def _langchain_block(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if part.block == "image_url":
        image: dict[str, Any] = {"url": part.url if part.data is None else part.data_url()}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    block: dict[str, Any] = {"type": "image"}
    if part.data is None:
        block["url"] = part.url
    else:
        block["base64"] = base64.b64encode(part.data).decode()
        block["mime_type"] = part.mime
    if part.detail is not None:
        block["extras"] = {"detail": part.detail}
    return block


def _content(message: Message) -> Any:
    parts = message.parts
    if len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    if not parts:
        return ""
    return [_langchain_block(p) for p in parts]


def to_langchain(case: Case, bill: Bill | None = None) -> list[Any]:
    """The case as LangChain messages. Every ``AIMessage`` carries the usage a provider
    would have reported for the request that produced it (``input_tokens``: the bill of
    the history before it; ``output_tokens``: its own) and ``model_provider``."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    bill = bill or Bill(case.images)
    out: list[Any] = []
    before = REPLY
    for index, message in enumerate(case.messages):
        ident = f"m{index}"
        content = _content(message)
        cost = message_bill(message, bill)
        if message.role == "system":
            out.append(SystemMessage(content, id=ident))
        elif message.role == "user":
            out.append(HumanMessage(content, id=ident, name=message.name))
        elif message.role == "tool":
            out.append(
                ToolMessage(
                    content, tool_call_id=message.answers or "", name=message.name, id=ident
                )
            )
        else:
            valid, invalid = langchain_calls(message.calls)
            output = cost - 3
            usage = {
                "input_tokens": before,
                "output_tokens": output,
                "total_tokens": before + output,
            }
            out.append(
                AIMessage(
                    content,
                    tool_calls=valid,
                    invalid_tool_calls=invalid,
                    usage_metadata=usage,
                    response_metadata={"model_provider": "openai"},
                    id=ident,
                )
            )
        before += cost
    return out


def _llamaindex_block(part: Part) -> Any:
    from llama_index.core.base.llms.types import ImageBlock, TextBlock

    if isinstance(part, Text):
        return TextBlock(text=part.text)
    if part.data is None:
        return ImageBlock(url=part.url, detail=part.detail)
    if part.block == "image_url":
        return ImageBlock(url=part.data_url(), detail=part.detail)
    return ImageBlock(image=part.data, detail=part.detail)


def to_llamaindex(case: Case) -> list[Any]:
    """The case as LlamaIndex ``ChatMessage`` s: text and image blocks; calls as
    ``ToolCallBlock`` s or OpenAI-style ``additional_kwargs["tool_calls"]`` (per
    :attr:`Case.call_style`); tool results with ``additional_kwargs["tool_call_id"]``;
    a ``name`` in ``additional_kwargs["name"]``."""
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

    out: list[Any] = []
    for message in case.messages:
        extra: dict[str, Any] = {}
        if message.name:
            extra["name"] = message.name
        if message.answers is not None:
            extra["tool_call_id"] = message.answers
        parts = message.parts
        blocks = [_llamaindex_block(p) for p in parts]
        if message.calls and case.call_style == "blocks":
            blocks.extend(
                ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=c.args)
                for c in message.calls
            )
        elif message.calls:
            extra["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _arguments(c)},
                }
                for c in message.calls
            ]
        if len(parts) == 1 and isinstance(parts[0], Text) and len(blocks) == 1:
            out.append(
                ChatMessage(role=message.role, content=parts[0].text, additional_kwargs=extra)
            )
        else:
            out.append(ChatMessage(role=message.role, blocks=blocks, additional_kwargs=extra))
    return out


# -- documents ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Passage:
    """A retrieved passage: its text, kind, source name and relevance score."""

    text: str
    kind: str
    source: str
    score: float


@dataclass(frozen=True)
class DocumentCase:
    """One generated document set and its budget."""

    flavor: str
    number: int
    passages: tuple[Passage, ...]
    budget: int
    bill: int
    """The oracle's bill of every passage as LangChain sends it (``page_content``)."""

    @property
    def name(self) -> str:
        return f"{self.flavor} #{self.number}"


def generate_documents(
    flavor: str, number: int, *, seed: int, bill: Bill | None = None
) -> DocumentCase:
    """Document set ``number`` of ``flavor`` (one of :data:`DOCUMENT_FLAVORS`): 8-40
    passages of 40-600 tokens, scores descending (the retriever's ranking)."""
    if flavor not in DOCUMENT_FLAVORS:
        raise ValueError(f"flavor must be one of {', '.join(DOCUMENT_FLAVORS)}, got {flavor!r}")
    rng = random.Random(f"bill-docs:{seed}:{flavor}:{number}")
    bill = bill or Bill()
    write = _Writer(rng, bill)
    count = rng.randint(8, 40)
    scores = sorted((rng.random() for _ in range(count)), reverse=True)
    passages: list[Passage] = []
    for i, score in enumerate(scores):
        kind = flavor.split()[0]
        if kind == "mixed":
            kind = rng.choice(("prose", "cjk", "json", "code"))
        text = write.of(kind, rng.randint(40, 600))
        passages.append(Passage(text, kind, f"{kind}-{number}-{i}.txt", round(score, 4)))
    total = sum(bill.text(p.text) for p in passages)
    budget = max(1, round(total * rng.uniform(0.2, 0.8)))
    return DocumentCase(flavor, number, tuple(passages), budget, total)


def generate_document_cases(
    per_flavor: int, *, seed: int, bill: Bill | None = None
) -> list[DocumentCase]:
    """``per_flavor`` document sets of every flavor."""
    bill = bill or Bill()
    return [
        generate_documents(flavor, number, seed=seed, bill=bill)
        for flavor in DOCUMENT_FLAVORS
        for number in range(per_flavor)
    ]


def to_documents(case: DocumentCase) -> list[Any]:
    """The passages as LangChain ``Document`` s (``relevance_score`` and ``source`` in
    their metadata)."""
    from langchain_core.documents import Document

    return [
        Document(p.text, metadata={"relevance_score": p.score, "source": p.source})
        for p in case.passages
    ]


def to_nodes(case: DocumentCase) -> list[Any]:
    """The passages as LlamaIndex ``NodeWithScore`` s (``file_name`` in the metadata: a
    synthesizer sends it with the text)."""
    from llama_index.core.schema import NodeWithScore, TextNode

    return [
        NodeWithScore(
            node=TextNode(text=p.text, id_=f"n{i}", metadata={"file_name": p.source}),
            score=p.score,
        )
        for i, p in enumerate(case.passages)
    ]
