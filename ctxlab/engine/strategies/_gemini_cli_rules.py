"""Gemini CLI's compression rules as pure functions (see ``gemini_cli.py`` for sources).

A lab message is seen as Gemini ``Content``: ``{"role": "user"|"model", "parts": [...]}``
with ``text`` parts (text and thinking blocks), ``functionCall`` parts (tool calls) and
``functionResponse`` parts (tool results, ``response: {"output": text}`` as Gemini CLI's
tool scheduler writes them). Lengths are JavaScript string lengths (UTF-16 code units).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.model import Block, BlockKind, Message, Role
from ..stages.js_text import js_json

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
# packages/core/src/prompts/snippets.ts getCompressionPrompt() (no approved plan), the
# template literal evaluated and .trim()-ed: stored byte for byte, pinned by sha256.
PROMPT_FILE = DATA / "gemini-cli-5411f113-compression_prompt.txt"
PROMPT_SHA256 = "4b5cfe86c1159f3c5cd9deebf4a9a4f55d07cf7e418be0ad4956a28eebba83dd"

# chatCompressionService.ts, byte for byte.
ANCHOR_PREVIOUS = (
    "A previous <state_snapshot> exists in the history. You MUST integrate all still-relevant "
    "information from that snapshot into the new one, updating it with the more recent events. "
    "Do not lose established constraints or critical knowledge."
)
ANCHOR_NEW = "Generate a new <state_snapshot> based on the provided history."
SCRATCHPAD = "\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>."
VERIFY = (
    "Critically evaluate the <state_snapshot> you just generated. Did you omit any specific "
    "technical details, file paths, tool results, or user constraints mentioned in the "
    "history? If anything is missing or could be more precise, generate a FINAL, improved "
    "<state_snapshot>. Otherwise, repeat the exact same <state_snapshot> again."
)
ACK = "Got it. Thanks for the additional context!"
SNAPSHOT_TAG = "<state_snapshot>"

# utils/tokenCalculation.ts
NON_ASCII_TOKENS_PER_CHAR = 1.5
MAX_CHARS_FOR_FULL_HEURISTIC = 100_000
CHARS_PER_TOKEN = 4
IMAGE_TOKEN_ESTIMATE = 3000
PDF_TOKEN_ESTIMATE = 25800


# DEFAULT_COMPRESSION_TOKEN_THRESHOLD (chatCompressionService.ts, earlier client.ts) by the
# date its commit reached main: (from date, fraction, commit). A session file names no CLI
# version, so the session's start date picks the default (releases followed within days);
# a user's model.compressionThreshold or a remote experiment flag may override it.
DEFAULT_THRESHOLDS = (
    ("", 0.7, "0c70a99b56 COMPRESSION_TOKEN_THRESHOLD = 0.7"),
    ("2025-10-30", 0.2, "68afb7200e (#12306)"),
    ("2025-11-14", 0.7, "6d83d3440c (#13079)"),
    ("2025-11-20", 0.5, "c7b5dcd28f (#13517)"),
)


def default_threshold(date: str) -> tuple[float, str]:
    """(the default compression fraction on ``date`` (ISO, "" = today's), its source)."""
    chosen = DEFAULT_THRESHOLDS[-1]
    if date:
        chosen = max((d for d in DEFAULT_THRESHOLDS if d[0] <= date[:10]), key=lambda d: d[0])
    return chosen[1], chosen[2]


def threshold_tokens(fraction: float, token_limit: int) -> int:
    """``compress``'s trigger: the last prompt's token count reaches ``fraction x
    tokenLimit(model)`` (``originalTokenCount < threshold * tokenLimit(model)``: no)."""
    return int(fraction * token_limit)


def compression_prompt() -> str:
    data = PROMPT_FILE.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PROMPT_SHA256:  # an edited copy would silently change every request
        raise RuntimeError(f"{PROMPT_FILE.name}: sha256 {digest} is not the pinned one")
    return data.decode("utf-8")


def js_len(text: str) -> int:
    """JavaScript ``string.length``: UTF-16 code units (an ASCII text's length: ``isascii``
    reads a flag, encoding would copy the text)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@lru_cache(maxsize=4096)
def text_tokens(text: str) -> float:
    """``estimateTextTokens``: 1/4 per ASCII code unit, 1.5 per other; length/4 above
    100,000 code units. (Cached: every compression re-reads the same tool outputs.)"""
    if text.isascii():  # the formula below with no other unit: the same float
        return len(text) / CHARS_PER_TOKEN
    n = js_len(text)
    if n > MAX_CHARS_FOR_FULL_HEURISTIC:
        return n / CHARS_PER_TOKEN
    ascii_units = len(text.encode("ascii", "ignore"))
    return ascii_units / CHARS_PER_TOKEN + (n - ascii_units) * NON_ASCII_TOKENS_PER_CHAR


def part_of(block: Block) -> dict[str, Any] | None:
    """The Gemini part a block becomes (None: no part)."""
    if block.kind in (BlockKind.TEXT, BlockKind.THINKING):
        return {"text": block.text}
    if block.kind is BlockKind.TOOL_USE:
        return {"functionCall": {"name": block.tool_name, "args": block.tool_input or {}}}
    if block.kind is BlockKind.TOOL_RESULT:
        return {"functionResponse": {"name": block.tool_name, "response": {"output": block.text}}}
    if block.kind is BlockKind.MEDIA:
        return {"inlineData": {"mimeType": block.media_type, "size": block.size}}
    return {"text": block.text} if block.text else None


def part_tokens(part: dict[str, Any]) -> float:
    """One part under ``estimateTokenCountSync`` (not yet floored)."""
    if isinstance(part.get("text"), str):
        return text_tokens(part["text"])
    if "functionResponse" in part:
        fr = part["functionResponse"]
        response = fr["response"]
        if len(response) == 1 and isinstance(response.get("output"), str):
            return _output_tokens(fr.get("name") or "", response["output"])
        return (js_len(fr.get("name") or "") + js_len(js_json(response))) / CHARS_PER_TOKEN
    if "inlineData" in part:
        mime = str(part["inlineData"].get("mimeType") or "")
        if mime.startswith("image/"):
            return IMAGE_TOKEN_ESTIMATE
        if mime.startswith("application/pdf"):
            return PDF_TOKEN_ESTIMATE
        return int(part["inlineData"].get("size") or 0) / CHARS_PER_TOKEN
    return js_len(js_json(part)) / CHARS_PER_TOKEN


@lru_cache(maxsize=16384)
def _output_tokens(name: str, output: str) -> float:
    """A ``{"output": ...}`` function response (cached: every compression re-estimates the
    whole history, and a long history's tool outputs exceed ``text_tokens``' cache)."""
    # ``js_json({"output": output})``: the key and braces are 11 ASCII units
    return (js_len(name) + 11 + js_len(js_json(output))) / CHARS_PER_TOKEN


def parts_of(message: Message) -> list[dict[str, Any]]:
    return [p for b in message.blocks if (p := part_of(b)) is not None]


def estimate_parts(parts: Sequence[dict[str, Any]]) -> int:
    """``estimateTokenCountSync(parts)``: the sum, floored once."""
    return math.floor(sum(part_tokens(p) for p in parts))


def gemini_role(message: Message) -> str:
    return "model" if message.role is Role.ASSISTANT else "user"


@dataclass(frozen=True, slots=True)
class Item:
    """One ``Content`` of the history: a live message (``index`` >= 0) or the summary /
    acknowledgement pair a compression wrote (``index`` = -1)."""

    role: str
    parts: tuple[dict[str, Any], ...]
    index: int = -1

    @property
    def is_function_response(self) -> bool:
        return any("functionResponse" in p for p in self.parts)

    @property
    def has_function_call(self) -> bool:
        return any("functionCall" in p for p in self.parts)

    def json_length(self) -> int:
        return js_len(js_json({"role": self.role, "parts": list(self.parts)}))


def find_compress_split_point(
    contents: Sequence[Item], fraction: float, counts: Sequence[int] | None = None
) -> int:
    """``findCompressSplitPoint``: index of the oldest item to keep (``len`` = compress
    everything). Splits only before a user item that is not a function response.
    ``counts``: each item's ``json_length()``, when the caller kept them."""
    if fraction <= 0 or fraction >= 1:
        raise ValueError("Fraction must be between 0 and 1")
    if counts is None:
        counts = [c.json_length() for c in contents]
    target = sum(counts) * fraction
    last_split = 0
    cumulative = 0
    for i, content in enumerate(contents):
        if content.role == "user" and not content.is_function_response:
            if cumulative >= target:
                return i
            last_split = i
        cumulative += counts[i]
    if contents and contents[-1].role == "model" and not contents[-1].has_function_call:
        return len(contents)
    return last_split


def format_truncated_tool_output(content: str, output_file: str, max_chars: int) -> str:
    """``formatTruncatedToolOutput``: the first 20% and last 80% of ``max_chars``."""
    if js_len(content) <= max_chars:
        return content
    head_chars = math.floor(max_chars * 0.2)
    tail_chars = max_chars - head_chars
    head = content[:head_chars]
    tail = content[-tail_chars:] if tail_chars else ""
    omitted = len(content) - head_chars - tail_chars
    return (
        f"Output too large. Showing first {head_chars:,} and last {tail_chars:,} characters. "
        f"For full output see: {output_file}\n{head}\n\n... [{omitted:,} characters omitted] "
        f"...\n\n{tail}"
    )


def output_file(temp_dir: str, tool_name: str, truncation_id: int) -> str:
    """``saveTruncatedToolOutput``'s path (``<tool>_<id>.txt`` under tool-outputs)."""
    safe_tool = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in tool_name)
    safe_tool = safe_tool.lower()
    safe_id = str(truncation_id)
    name = f"{safe_id}.txt" if safe_id.startswith(safe_tool) else f"{safe_tool}_{safe_id}.txt"
    return f"{temp_dir.rstrip('/')}/tool-outputs/{name}"


def prompt_role(item: Item) -> str:
    return "assistant" if item.role == "model" else "user"


def render(item: Item) -> str:
    """An item as the summary call's message text (calls as ``[functionCall name] args``)."""
    out: list[str] = []
    for part in item.parts:
        if "text" in part:
            out.append(str(part["text"]))
        elif "functionCall" in part:
            fc = part["functionCall"]
            out.append(f"[functionCall {fc['name']}] {js_json(fc['args'])}")
        elif "functionResponse" in part:
            out.append(str(part["functionResponse"]["response"]["output"]))
    return "\n".join(out)
