"""The import warning codes: every way an importer bends data, named once.

An importer never drops or alters data silently: each time it does, it adds a counted
``ImportWarning`` carrying one of these codes. Pages and the CLI show the label and the
one-line meaning, so a user reads "duplicate JSON key: the last value was used" instead
of guessing from an importer's wording.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WarningCode:
    code: str
    label: str
    meaning: str


_CODES = (
    # Conversation structure (thread rebuilding)
    WarningCode(
        "side-lines-set-aside",
        "side lines set aside",
        "local-command, meta or empty lines hanging off the conversation outside its main "
        "thread (e.g. /export, #memory): the model never saw them, so they are not imported",
    ),
    WarningCode(
        "alternate-branch",
        "alternate branch kept",
        "lines of a rewound or edited branch: imported as their own conversation, listed "
        "as an alternate of the thread they fork from",
    ),
    WarningCode(
        "parent-cycle",
        "parentUuid cycle",
        "lines whose parent chain loops back on itself: no start of a thread reaches them, "
        "so they are set aside",
    ),
    WarningCode(
        "parent-missing",
        "parent not in file",
        "a line names a parent that is not in this file: a thread starts there",
    ),
    WarningCode(
        "repeated-id",
        "repeated line",
        "a line repeats an earlier line's id (a resumed session): the later copy is skipped",
    ),
    WarningCode(
        "unknown-record",
        "unknown record",
        "a record of a type this importer does not know: skipped",
    ),
    WarningCode(
        "unreadable-line",
        "unreadable line",
        "a JSONL line that is not valid JSON (or not an object): skipped, as the agent's own "
        "loader skips it; the rest of the file is imported",
    ),
    WarningCode(
        "off-branch-entries",
        "entries off the current branch",
        "entries of a session tree that are not on the current branch (the chain from the "
        "last entry back to the root): the agent's context never held them, not imported",
    ),
    WarningCode(
        "usage-total-differs",
        "reported total differs",
        "a response's reported total tokens is not the sum of its input, output and cache "
        "parts: the parts are kept (pi compares the total; the replay reads the sum)",
    ),
    WarningCode(
        "excluded-from-context",
        "excluded from context",
        "a record the agent kept out of the model's context (pi's !! commands): not imported",
    ),
    # Values bent while reading
    WarningCode(
        "duplicate-key",
        "duplicate JSON key",
        "a JSON object repeats a key: the last value is used, as JSON parsers do",
    ),
    WarningCode(
        "tool-arguments-not-json",
        "tool arguments not JSON",
        "tool-call arguments are a string that is not valid JSON: kept as the raw string",
    ),
    WarningCode(
        "unreadable-json-text",
        "JSON text unreadable",
        "a value that should hold JSON text (a request body, a stream event, tool "
        "definitions) does not parse: skipped, as the message says",
    ),
    WarningCode(
        "tool-results-paired-by-order",
        "tool results paired by order, unsure",
        "a file without tool ids whose results do not match its calls one for one (a tool "
        "turn with more or fewer results than the calls before it, a result with no call "
        "waiting, calls left without a result): paired in order within the turn, the rest "
        "kept unpaired",
    ),
    WarningCode(
        "cut-off-last-line",
        "last line cut off",
        "the file's last line is incomplete JSON (a session still being written): every "
        "complete line is imported, the cut one is left out",
    ),
    WarningCode(
        "tool-result-unknown-id",
        "tool result for an unknown call",
        "a tool result names a call id that no tool call in its conversation has: kept, unpaired",
    ),
    WarningCode(
        "non-finite-number",
        "NaN/Infinity",
        "NaN or Infinity (not valid JSON) read as a missing value",
    ),
    WarningCode(
        "number-as-string",
        "number given as a string",
        'a count given as a string ("123") read as the number',
    ),
    WarningCode(
        "nul-character",
        "NUL character",
        "NUL characters (\\u0000) in text shown as \u2400 (databases such as PostgreSQL "
        "cannot store them); the kept original file still has them",
    ),
    WarningCode(
        "lone-surrogate",
        "unpaired surrogate",
        "an unpaired UTF-16 surrogate escape in text shown as U+FFFD; the kept original "
        "file still has it",
    ),
    WarningCode(
        "utf16-decoded",
        "UTF-16 file",
        "the file is UTF-16 text: decoded and imported (line numbers count the decoded "
        "text; byte offsets point into the original file)",
    ),
)

CODES: dict[str, WarningCode] = {c.code: c for c in _CODES}


def describe(code: str) -> WarningCode | None:
    """The catalogue entry of ``code``, or None for a warning without a code."""
    return CODES.get(code)
