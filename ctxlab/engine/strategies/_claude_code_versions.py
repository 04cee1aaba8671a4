"""Claude Code's compaction rules by CLI version (see claude_code.py).

Each row is one range of versions with the values that decide when auto-compact fires and
what it writes, and where each value comes from:

- [data] the ``compact_boundary`` lines of 123 real Claude Code sessions (the
  ``entire/checkpoints/v1`` branch of github.com/entireio/cli, MIT; CLI 2.0.76-2.1.42,
  all on 200K-window Opus 4.5/4.6): every automatic boundary's ``preTokens`` lies in
  155,031-158,105 on 2.0.76-2.1.20 (threshold 155,000 = 200,000 - 32,000 - 13,000) and
  in 167,038-176,700 on 2.1.25-2.1.42 (167,000 = 200,000 - 20,000 - 13,000). The
  summary message reads "The conversation is summarized below:" up to 2.1.5 and "The
  summary below covers the earlier portion of the conversation." from 2.1.7 on.
- [notes] Claude Code's CHANGELOG, 2.1.21: "Fixed auto-compact triggering too early on
  models with large output token limits" (the reserve became ``min(max output, 20 000)``;
  before, the model's whole max output, 32 000 for these models, was reserved).
- [code] the 2.1.88 source published from its npm source map
  (``src/services/compact/autoCompact.ts``: ``MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000``,
  ``AUTOCOMPACT_BUFFER_TOKENS = 13_000``; ``microCompact.ts``).

The count compared with the threshold (``tokenCountWithEstimation``): [data] the last
response's usage plus the rough estimate of the messages after it matches ``preTokens``
exactly at 55 of 131 automatic boundaries (2.0.76-2.1.42). [code] In 2.1.64 and from 2.1.69
the function walks back to the response's first record before estimating, so a response
written as several lines has its later lines counted again (``later_blocks``); 2.1.43-2.1.63
and 2.1.67-2.1.68 do not (each published cli.js read).
"""

from __future__ import annotations

import re
from typing import NamedTuple

CURRENT = "2.1.88"  # the newest version whose code was read


class VersionRules(NamedTuple):
    """One range of Claude Code versions, ``first``..``last`` inclusive ("" = open). (A
    NamedTuple: ``ctxlab statusline`` loads this table, and ``dataclasses`` cost it ~10 ms
    of each call.)"""

    first: str
    last: str
    output_reserve: int  # tokens kept for the summary's output: window - this - buffer
    buffer: int  # AUTOCOMPACT_BUFFER_TOKENS
    prompt_version: str  # a key of _claude_code_rules.VERSIONS
    transcript_hint: bool  # the summary message quotes the transcript's path
    # The agent's count holds the last response's final output tokens (its in-memory usage
    # is updated when the stream ends), while the transcript may carry the usage written
    # when the stream started (output 1-25): False where the count used that one too.
    final_output: bool
    microcompact: str  # what this strategy does about microcompaction in the range
    sources: tuple[str, ...]
    # ``tokenCountWithEstimation`` walks back to the response's first line (2.1.88: "Walk
    # back past any earlier sibling records split from the same API response"), so the
    # estimate adds the response's own later lines (one block each) on top of its usage.
    later_blocks: bool = False
    # The auto-compact check counts the messages after the last response too (their rough
    # estimate, ``tokenCountWithEstimation``); up to 2.1.1 it read the last response's usage
    # alone (cli.js 2.0.76, 2.1.1: ``tokenCountFromLastAPIResponse``), from 2.1.2 both.
    estimate_after: bool = True

    @property
    def label(self) -> str:
        if not self.first:
            return f"up to {self.last.replace('.999', '.x')}"
        return f"{self.first} and later" if not self.last else f"{self.first}-{self.last}"

    def covers(self, version: str) -> bool:
        key = version_key(version)
        return (not self.first or key >= version_key(self.first)) and (
            not self.last or key <= version_key(self.last)
        )


_REPLAYED = (
    "replayed where the transcript names the cleared results (microcompact_boundary); "
    "its trigger is not modelled (no published source for these versions)"
)

_USAGE_ALONE = (
    "code: cli.js 2.0.76 and 2.1.1 check the threshold with the last response's usage alone "
    "(tokenCountFromLastAPIResponse), 2.1.2 on with the estimate of the messages after it "
    "too; data: a 2.0.76 Sonnet 4.5 session went past usage 154,619 + a 3,573-character "
    "result without compacting and compacted one call later (xiaomoziyi/session-logs)"
)
# Whether ``tokenCountWithEstimation`` walks back to the response's first record, read in
# each published cli.js (npm @anthropic-ai/claude-code): 2.1.47, 2.1.49 and 2.1.63 count
# from the last record with usage; 2.1.64 walks back; 2.1.67 and 2.1.68 do not again (2.1.65
# and 2.1.66 were never published); 2.1.69, 2.1.72, 2.1.75, 2.1.78, 2.1.81 and 2.1.88 do.
_NO_WALK_BACK = (
    "code: cli.js 2.1.47/2.1.49/2.1.63/2.1.67/2.1.68 tokenCountWithEstimation: usage of the "
    "last record that has one + the estimate of the records after it (no walk back); data: "
    "a 2.1.47 session did not compact where the walk back counts 168,178 (ElixirTrials/"
    "medgemma-hackathon) and did one call later at preTokens 168,672"
)
_WALK_BACK = (
    "code: cli.js 2.1.64 and 2.1.69-2.1.81 walk back past the response's earlier records "
    "(2.1.88 tokens.ts: 'Walk back past any earlier sibling records split from the same API "
    "response'); data: a 2.1.81 boundary's preTokens (167,753) is the last usage line plus "
    "the estimate of the response's own later line exactly (ShamsiievDmytro/entire-bmad)"
)

RANGES: tuple[VersionRules, ...] = (
    VersionRules(
        "",
        "2.0.999",
        32_000,
        13_000,
        "2.0",
        False,
        True,
        _REPLAYED,
        (
            "data: auto boundaries at preTokens 155,250-155,377 (2.0.76); none older",
            "data: summary message 'The conversation is summarized below:', analysis kept, "
            "no transcript path",
            "notes: CHANGELOG 2.1.21 (the reserve was the model's max output, 32,000)",
            _USAGE_ALONE,
        ),
        estimate_after=False,
    ),
    VersionRules(
        "2.1.0",
        "2.1.1",
        32_000,
        13_000,
        "2.0",
        True,
        True,
        _REPLAYED,
        (
            "data: auto boundaries at preTokens 155,109-158,105 (2.1.1-2.1.5)",
            "data: summary message as 2.0.76 plus the transcript path",
            "data: where a 2.1.5 line holds the response's final usage, it is the count "
            "exactly; where it holds the stream's first (output 3), the count is higher",
            "notes: CHANGELOG 2.1.21 (the reserve was the model's max output, 32,000)",
            _USAGE_ALONE,
        ),
        estimate_after=False,
    ),
    VersionRules(
        "2.1.2",
        "2.1.6",
        32_000,
        13_000,
        "2.0",
        True,
        True,
        _REPLAYED,
        (
            "data: auto boundaries at preTokens 155,109-158,105 (2.1.1-2.1.5)",
            "data: summary message as 2.0.76 plus the transcript path",
            "data: where a 2.1.5 line holds the response's final usage, it is the count "
            "exactly; where it holds the stream's first (output 3), the count is higher",
            "notes: CHANGELOG 2.1.21 (the reserve was the model's max output, 32,000)",
        ),
    ),
    VersionRules(
        "2.1.7",
        "2.1.11",
        32_000,
        13_000,
        "2.1",
        True,
        True,
        _REPLAYED,
        (
            "data: auto boundaries at preTokens 155,066-162,548 (2.1.7)",
            "data: summary message 'The summary below covers the earlier portion', analysis "
            "kept, 'Please continue the conversation from where we left it off' (prompt "
            "version 2.1)",
            "data: usage lines with output 1-3 (the stream's first); the count is higher by "
            "about the response's own size",
        ),
    ),
    VersionRules(
        "2.1.12",
        "2.1.20",
        32_000,
        13_000,
        "2.1",
        True,
        False,
        _REPLAYED,
        (
            "data: auto boundaries at preTokens 155,031-176,700 (2.1.12-2.1.20); each "
            "equals the last usage line (output 1-5 as written) plus the later messages' "
            "estimate, exactly, at all 29",
            "data: microcompact_boundary lines at 56,973-78,208 (2.1.14-2.1.20)",
            "notes: CHANGELOG 2.1.21 (the reserve was the model's max output, 32,000)",
        ),
    ),
    VersionRules(
        "2.1.21",
        "2.1.42",
        20_000,
        13_000,
        "2.1",
        True,
        True,
        _REPLAYED,
        (
            "notes: CHANGELOG 2.1.21 'Fixed auto-compact triggering too early on models "
            "with large output token limits'",
            "data: auto boundaries at preTokens 167,038-176,700 (2.1.25-2.1.42); where the "
            "last usage line holds the stream's first output (1-25) the count is higher by "
            "the response's final output, which the transcript does not record",
            "data: summary message as 2.1.7 (analysis kept, 'Please continue…')",
        ),
    ),
    *(
        VersionRules(
            first,
            last,
            20_000,
            13_000,
            "2.1.88",
            True,
            True,
            "legacy microcompact removed (2.1.88): replayed where the transcript names it; the "
            "time-based one is set by a remote flag and cached microcompact is internal, so "
            "neither trigger is modelled",
            (
                "code: 2.1.88 autoCompact.ts MAX_OUTPUT_TOKENS_FOR_SUMMARY 20,000, "
                "AUTOCOMPACT_BUFFER_TOKENS 13,000; tokens.ts tokenCountWithEstimation; "
                "prompt.ts (analysis stripped); microCompact.ts",
                "where between 2.1.43 and 2.1.88 the summary message changed is not known",
                walk,
            ),
            later_blocks=later,
        )
        for first, last, later, walk in (
            ("2.1.43", "2.1.63", False, _NO_WALK_BACK),
            ("2.1.64", "2.1.66", True, _WALK_BACK),
            ("2.1.67", "2.1.68", False, _NO_WALK_BACK),
            ("2.1.69", "", True, _WALK_BACK),
        )
    ),
)

_NUMBERS = re.compile(r"\d+")


def version_key(version: str) -> tuple[int, ...]:
    """``"2.1.7"`` -> ``(2, 1, 7)``; text after the numbers is ignored; "" -> ``()``."""
    head = version.strip().split("-", 1)[0].split("+", 1)[0]
    return tuple(int(n) for n in _NUMBERS.findall(head)[:3])


def is_version(version: str) -> bool:
    return len(version_key(version)) >= 2


def rules_for(version: str) -> VersionRules:
    """The range holding ``version`` (the newest range for an unknown version)."""
    if is_version(version):
        for rules in RANGES:
            if rules.covers(version):
                return rules
    return RANGES[-1]


# ``OriginalCompaction.detail`` key (the importer sets it, the strategy reads it): the
# boundary's ``logicalParentUuid``, the last message the agent had when it compacted, is not
# in the file. The agent counted a line it never wrote (2.1.42: the prompt the user sent,
# screenshot and all, summarised before it was written; its words are quoted in the
# summary), so the count before the boundary is open by that line's size.
UNWRITTEN_PARENT = "unwritten_parent"

# A usage line written when the stream started reports 1-25 output tokens: below this, or
# below half the response's own estimate, the final output is not in the transcript.
STREAM_START_OUTPUT = 30


def missing_output(rules: VersionRules, output: int, own: int) -> int | None:
    """The estimate of a response's final output the transcript does not hold (its own
    estimate ``own`` minus the ``output`` its usage line reports), None when the usage
    line holds it (or the range's count used that line too: ``final_output`` False).
    Output 0: the source reports no output at all, not a stream's first line."""
    if rules.final_output and output > 0 and (output < STREAM_START_OUTPUT or 2 * output < own):
        return max(0, own - output)
    return None


def count_after_response(rules: VersionRules, total: int, output: int, own: int, later: int) -> int:
    """The count Claude Code checks its threshold with right after a response (its
    ``tokenCountWithEstimation`` before the next message is added): the response's usage
    ``total`` (prompt + output), plus the final output the transcript does not hold
    (``missing_output``; ``own``: the response's own estimate), plus, from 2.1.43
    (``later_blocks``), the estimate ``later`` of the response's own later lines (its blocks
    after the first), which the walk back to the response's first line counts again. The
    ``claude_code`` strategy's count after a response and ``evaluate.session_now``'s step
    count are this rule."""
    missing = missing_output(rules, output, own)
    return total + (missing or 0) + (later if rules.later_blocks else 0)


def describe_rules() -> list[dict[str, object]]:
    """The table as plain data, for pages and docs."""
    return [
        {
            "versions": r.label,
            "first": r.first,
            "last": r.last,
            "output_reserve": r.output_reserve,
            "autocompact_buffer_tokens": r.buffer,
            "threshold_200k": 200_000 - r.output_reserve - r.buffer,
            "prompt_version": r.prompt_version,
            "count_uses_final_output": r.final_output,
            "quotes_transcript_path": r.transcript_hint,
            "microcompact": r.microcompact,
            "sources": list(r.sources),
        }
        for r in RANGES
    ]
