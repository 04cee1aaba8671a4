"""Find the facts a compaction can lose, in the categories a person cares about.

Categories (``KINDS``, in display order):

- ``instructions``: sentences of what the user typed that ask for something or constrain
  it ("never touch the migrations", "add a dark mode") — user text only, never tool output;
- ``paths``: file paths (absolute, ``~``/``./`` relative, ``dir/file.ext``, ``file.ext``);
- ``commands``: shell commands the agent ran (a tool call's ``command``/``cmd``) and
  ``$ cmd`` prompt lines;
- ``errors``: error lines (``KeyError: ...``, ``error: ...``, ``Traceback``, ``FAILED``,
  ``No such file or directory`` ...);
- ``identifiers``: names in code (``snake_case``, ``CamelCase``, ``camelCase``, ``f()``)
  and record codes (``HAT170``);
- ``numbers``: numbers with a unit (``300 ms``, ``1.5 GB``, ``32000 tokens``, ``85%``,
  ``$1,200``) and versions (``15.5.2``, ``v2.1``);
- ``urls``.

Facts come from decoded content, never from serialised JSON: a tool call's input is walked
value by value (so ``"a\\nReport"`` yields no ``nReport``), its numeric arguments
(timeouts, offsets) and protocol fields (status, priority, ids) are not facts. Tool outputs
lose their ``cat -n``/Read line-number prefixes (``   12→``, ``    12\\t``) first. A literal
backslash escape left inside a decoded value (code that holds ``"\\n"``) separates words.

Pure regexes, linear in the text. ``facts`` works on plain text (summaries, material);
``message_facts`` on a message's blocks (role-aware, memoised by content).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..core import harness
from ..core.lru import BoundedLRU
from ..core.model import Block, BlockKind, Message
from ..core.textkeys import clear_caches as clear_word_sets
from ..core.textkeys import text_key
from .instruction_sentences import INSTRUCTION_RE as INSTRUCTION_RE
from .instruction_sentences import META_LINE_RE as META_LINE_RE
from .instruction_sentences import SENTENCE_RE as SENTENCE_RE
from .instruction_sentences import instruction_sentences

# Entries of each memo of the summariser's and fact scans (keyed by texts, often rendered
# for one summary and dead but for the memo): 8,192 held up to ~20 MiB apiece after a long
# replay. Their hits come at short distances (an item read again within a summary or by
# the next ones): on the realistic 20k transcript, per strategy, 1,024 keep 98-100% of the
# hits of the busy ones (first lines, fact heads) and most of the rest, for ~1-2.5 MiB.
SCAN_MEMO_ENTRIES = 1024

# Bumped whenever extraction changes what it finds: stored analyses of an older version
# are recomputed instead of shown (replay_app.inspect.stored_retention).
VERSION = 5  # 4: harness protocol words are no identifiers; instructions of typed text only
# 5: names inside a path-like match that is no path are identifiers, line by line

KINDS = ("instructions", "paths", "commands", "errors", "identifiers", "numbers", "urls")

URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]\\|]+")
_URL_TAIL = ".,;:!?*'\""
# Path characters, with Next.js-style "(group)" and "[id]" segments; a segment must hold a
# letter (checked after matching: inside the pattern it made matching slow).
_PCH = r"[\w.@+()\[\]-]"
PATH_RE = re.compile(
    # what every alternative's own lookbehind requires, then the first characters they can
    # start with: cheap tests that fail inside words and paths, where most positions are
    r"(?<![\w/.@-])(?=[~./\w@+()\[\]-])(?:"
    # absolute or home/dot-relative with at least two segments
    r"(?=[~./])(?<![\w/.:@-])(?:~|\.{1,2})?(?:/" + _PCH + r"+){2,}/?"
    # one segment of at least four characters after a space or quote: /workspace, /tmp2
    r"|(?=/)(?<![^\s\"'`(=])/[A-Za-z][\w.-]{3,}(?![\w/])"
    # dir/.../name.ext (or .dotfile)
    r"|(?<![\w/.@()-])(?:" + _PCH + r"++/)+[\w.-]*\.[A-Za-z]\w{0,7}\b"  # ++: no backtracking
    # a bare file name with a known extension
    r"|(?<![\w/.@-])[\w-]+\.(?:py|ipynb|js|mjs|cjs|ts|tsx|jsx|go|rs|java|c|h|cc"
    r"|cpp|hpp|md|json|jsonl|yaml|yml|toml|txt|sh|html|css|scss|sql|rb|php|kt|swift|cfg|ini"
    r"|lock|log|csv|xml|env|vue|svelte|lua|pl|r|m|cs|dart|ex|exs|tf)\b"
    r")"
)
_LETTER = re.compile(r"[A-Za-z_]")
# Every ``PATH_RE`` match holds a "/" or a dot before a letter (an extension), and only
# characters of ``_PATH_RUN``: so a match lies inside a run of those characters that holds
# such a seed. ``_path_scan`` scans only those runs (most of a text is none: prose, code),
# and no text without a seed (about 40% of summary parts).
_DOT_LETTER = re.compile(r"\.[A-Za-z]")
_PATH_SEED = re.compile(r"/|\.[A-Za-z]")
_PATH_RUN = re.compile(r"[\w.@+()\[\]~/-]*")


def _run_end(text: str, at: int) -> int:
    run = _PATH_RUN.match(text, at)  # always matches (maybe nothing)
    return run.end() if run else at


def _is_path_fact(match: str) -> bool:
    return bool((path := _path(match)) and not _is_product_name(path))


def _outside_paths(rest: str, found: list[str], cut: str, kept: int) -> str:
    """``rest`` without the path matches that are path facts: a name inside a path is part
    of that fact, a name inside a match that is no path (a product name) is its own. Decided
    match by match, so the facts of a text are the facts of its lines (``facts_of_parts``)."""
    if kept == len(found):
        return cut
    if not kept:
        return rest
    return PATH_RE.sub(lambda m: " " if _is_path_fact(m.group()) else m.group(), rest)


def _path_scan(text: str) -> tuple[list[str], str]:
    """``_scan(PATH_RE, text)``, scanning only the runs of path characters around a seed.

    Exact: no match crosses a run's ends (each holds a character no match holds), the
    lookbehinds see the text before a run, and a run is scanned up to the character after
    it (what the one-character lookaheads at a match's end read)."""
    if "/" not in text and _DOT_LETTER.search(text) is None:
        return [], text
    found: list[str] = []
    pieces: list[str] = []
    last = 0
    size = len(text)
    backwards = text[::-1]  # a run's start: the run of path characters before the seed
    seed = _PATH_SEED.search(text)
    while seed is not None:
        at = seed.start()
        start = size - _run_end(backwards, size - at)
        end = _run_end(text, at)
        for match in PATH_RE.finditer(text, start, end + 1):
            a, b = match.span()
            found.append(text[a:b])
            pieces.append(text[last:a])
            last = b
        seed = _PATH_SEED.search(text, end)
    if not found:
        return found, text
    pieces.append(text[last:])
    return found, " ".join(pieces)


def _path(found: str) -> str:
    """A matched path cleaned up, or "" when it is not one: every segment holds a letter
    ("/10/20" is a date or a ratio), brackets balance, a sentence's full stop is dropped."""
    if found.endswith(".") and not found.endswith(".."):
        found = found.rstrip(".")
    while found[-1:] in ")]" and found.count(found[-1]) > found.count(
        "(" if found[-1] == ")" else "["
    ):
        found = found[:-1]
    kept = False  # (a loop: this runs for every path match)
    for part in found.split("/"):
        if part in _NO_SEGMENT:
            continue
        if _LETTER.search(part) is None:
            return ""
        kept = True
    return found if kept else ""


_NO_SEGMENT = frozenset(("", "~", ".", ".."))


# Multi-part names only: a single lowercase word (``title``, ``trim()``) is prose or a
# built-in far more often than a name a person would miss.
IDENT_RE = re.compile(
    # every alternative starts a word with one of these: most positions fail at the first
    # test (each alternative's own boundary or lookbehind excludes a position inside a word)
    r"\b(?=[A-Za-z0-9_])(?:"
    # possessive (*+ ++): what follows a run never matches a character of the run, so giving
    # characters back cannot make the next part or the closing \b match; only backtracking
    # time is saved
    r"\b(?:[a-z][a-z0-9]*+(?:_[a-z0-9]++)++|__[a-z]\w*__|_[a-z0-9]++_[a-z0-9_]++"
    r"|[A-Z][a-z][a-z0-9]*+(?:[A-Z][a-z0-9]*+)++|[a-z]++[0-9]*+(?:[A-Z][a-z0-9]*+)++"
    r"|[A-Z]{2,}+(?:_[A-Z0-9]++)++)\b"
    r"|\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*[0-9])[A-Z0-9]{5,12}\b"  # record codes: HAT170
    r"|(?<![#\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"  # commits
    r")"
)
# Every IDENT_RE match is a whole run of word characters (each alternative opens and closes
# on a boundary) holding "_", a capital after a lowercase letter or a digit (the second part
# of a CamelCase or camelCase name), or a digit beside an ASCII letter (a record code holds
# a capital and a digit, a commit a digit and a hex letter: some two of them touch). Plain
# words, capitalised or all capitals, and bare numbers (most of prose) never match. So the
# runs are found from those characters (a class the regex engine skips to, then a check of
# the neighbours) and matched one by one, instead of trying IDENT_RE at every position.
_IDENT_SEED = re.compile(
    r"[_0-9A-Z](?:(?<=_)|(?<=[a-z0-9][A-Z])|(?<=[A-Za-z][0-9])|(?<=[0-9])(?=[A-Za-z]))"
)
_RUN_REST = re.compile(r"\w*")


def identifiers_found(text: str) -> list[str]:
    """``IDENT_RE.findall(text)``, trying the pattern only at runs that hold a seed."""
    found: list[str] = []
    match = IDENT_RE.match
    rest = _RUN_REST.match
    done = -1  # the end of the last run tried: its other seeds are skipped
    for seed in _IDENT_SEED.finditer(text):
        start = seed.start()
        if start < done:
            continue
        run = rest(text, start)  # \w* always matches
        done = run.end() if run else start
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):  # re's \w
            start -= 1  # back to the run's start
        hit = match(text, start, done + 1)  # + 1: the closing lookahead sees what follows
        if hit:
            found.append(hit.group())
    return found


UNITS = (
    r"ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?"
    r"|[KMGT]i?B|kB|bytes?|B|tokens?|k tokens|chars?|characters|words?|lines?|files?|tests?"
    r"|rows?|messages?|steps?|turns?|calls?|requests?|users?|errors?|warnings?"
    r"|px|em|rem|pt|dpi|fps|[kMG]?Hz|x|%|°C|°F|USD|EUR|dollars?"
)
# after a space only words that cannot be a CSS class or flag ("h-12 px-4" is no "12 px")
SPACED_UNITS = (
    r"ms|seconds?|minutes?|hours?|days?|weeks?|months?|years?|[KMGT]i?B|kB|bytes?|tokens?"
    r"|chars?|characters|words?|lines?|files?|tests?|rows?|messages?|steps?|turns?|calls?"
    r"|requests?|users?|errors?|warnings?|%|USD|EUR|dollars?"
)
NUMBER_RE = re.compile(
    r"(?=[\d$v])(?:"
    r"(?<![\w.$])\$\d+(?:,\d{3})*(?:\.\d+)?(?![\w.])"  # money
    r"|(?<![\w.-])\d+(?:,\d{3})*(?:\.\d+)?(?:"
    + UNITS
    + r"|[ \t](?:"
    + SPACED_UNITS
    + r"))(?![\w-])"
    r"|(?<![\w.])v?\d+\.\d+\.\d+(?:[-+.][\w.]+)?(?![\w.])"  # x.y.z versions
    r"|(?<![\w.])v\d+(?:\.\d+)?(?![\w.])"  # v14, v1.2
    r")"
)
# What makes a line an error line; the line around each hit is the fact (searching for the
# marks and widening to the line is linear, a "^.*(?:...).*$" pattern is not).
ERROR_RE = re.compile(
    # each group opens with a lookahead on its first letters: most positions fail at once
    # (and the whole pattern with their union)
    r"(?=[EFefpP\d \tTNcPS错失])(?:"
    r"(?<=[a-z])(?=[EF])(?:Error|Exception|Failure)(?::|$)"
    r"|\b(?=[eEfFpP\d])(?:(?:error|ERROR|Error|fatal|FATAL|Fatal|panic|ERR!|FAILED|FAIL|Failed"
    r"|failed)[ \t]*[:!\]]|(?:FAILED|FAIL|ERROR)\b(?= |$)|error [A-Z]+\d+:|error\(s\)"
    r"|Failed (?:Tests?|Suites?)\b|\d+ failed\b|[Ee]xit code [1-9])"
    r"|^[ \t]*Traceback \(most recent call last\)"
    r"|(?=[NcPS错失])(?:No such file or directory|command not found|Permission denied"
    r"|Segmentation fault|错误|失败)"
    r")",
    re.MULTILINE,
)
# code shown in a tool output ("error: E;", "raise ValueError(...)") is not an error line
CODE_LINE_RE = re.compile(
    r"[;{(,\[+]\s*$|=>|\(f?[\"']|\bnew \w+\(|\b(?:print|console\.\w+|log\w*\.\w+|logger\.\w+)\("
    r"|^[+-]?\s*(?:export|import|from|const|let|var|def|return|function|class|if|elif"
    r"|else|raise|throw|catch|except|interface|type|public|private|async|await|assert|try)\b"
)
PROMPT_RE = re.compile(r"^[ \t]*\$ ([A-Za-z./~].*)$", re.MULTILINE)  # "$ 0.02 tokens" is a cost
CLI = (
    r"pnpm|npm|npx|yarn|bun|git|python3?|pip3?|pytest|uv|make|cargo|go|node|docker|kubectl"
    r"|bash|sh|ls|cd|rg|grep|sed|cat|curl|poetry|ruff|mypy|tox|gh|bundle|rake|mvn|gradle"
)
INLINE_COMMAND_RE = re.compile(r"(?<!`)`((?:" + CLI + r") [^`\n]+)`(?!`)")

# cat -n / Read tool line prefixes ("   12→", "    12\t") and JSON escapes left in text
LINE_NUMBER_RE = re.compile(r"^ *\d+(?:→|\t|:(?= ))", re.MULTILINE)  # + SWE-agent "12: "
ESCAPE_RE = re.compile(r"\\[nrt]")
BASE64_RE = re.compile(r"[A-Za-z0-9+/=]{64,}")  # inline images, keys: no facts inside
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours in test runner output


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# CamelCase words that are product names, not names in code
NOT_IDENTIFIERS = _names(
    "JavaScript TypeScript GitHub GitLab PostgreSQL MySQL MongoDB YouTube LinkedIn PowerShell"
    " WordPress OpenAI DeepSeek FastAPI DevTools NextJs NodeJs PyPI PyTorch TensorFlow HuggingFace"
    " iPhone iPad macOS iOS WebSocket WebSockets OAuth LaTeX CamelCase PascalCase McDonald"
    " McDonalds PostCSS"
)
# Names every project of a language or framework shares, and the agent harnesses' own tool
# and argument names: the facts are the project's names, not these.
NOT_PROJECT_NAMES = _names(
    "className htmlFor onClick onChange onSubmit tabIndex innerHTML textContent classList"
    " preventDefault stopPropagation addEventListener removeEventListener querySelector"
    " querySelectorAll getElementById useState useEffect useMemo useCallback useRef useContext"
    " useReducer useLayoutEffect FormEvent ChangeEvent MouseEvent KeyboardEvent ReactNode"
    " devDependencies peerDependencies compilerOptions"
    " str_replace_editor str_replace execute_bash execute_ipython_cell edit_file_by_replace"
    " run_ipython run_shell_command old_string new_string new_content to_replace file_path"
    " file_text replace_all tool_use tool_result tool_use_id tool_call_id tool_use_error"
    # the harnesses' protocol words: item types (Codex, OpenAI, Gemini), plan statuses and
    # fields (Claude Code's TodoWrite, Codex's update_plan), notebook-edit arguments
    " function_call function_call_output functionCall functionResponse tool_calls tool_call"
    " call_id custom_tool_call custom_tool_call_output local_shell_call web_search_call"
    " reasoning_content input_text output_text in_progress activeForm todo_list"
    " notebook_path new_source cell_number cell_id cell_type edit_mode"
)
BOILERPLATE_URL_RE = re.compile(r"^https?://www\.w3\.org/")  # XML namespaces and DTDs
TOOL_ID_RE = re.compile(r"^(?:toolu|call|chatcmpl|msg|resp|fc|rs|srvtoolu)_", re.IGNORECASE)

# Tool-input fields that carry protocol state, not facts
SKIP_INPUT_KEYS = frozenset(
    {"status", "priority", "id", "activeForm", "tool_use_id", "bash_id", "shell_id", "mode"}
    | {"edit_mode", "type"}
)
COMMAND_KEYS = frozenset({"command", "cmd", "commands", "shell_command", "script"})
SUBCOMMAND_SIBLINGS = frozenset({"path", "file_path", "file"})  # str_replace_editor view ...


@dataclass(frozen=True, slots=True)
class Facts:
    instructions: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()

    def items(self) -> list[tuple[str, str]]:
        return [(kind, value) for kind in KINDS for value in getattr(self, kind)]


def _unique(values: Iterable[str], limit: int | None) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        if value not in seen:
            seen[value] = None
            if limit is not None and len(seen) >= limit:
                break
    return tuple(seen)


def _clean_url(url: str) -> str:
    return url.rstrip(_URL_TAIL)


def _is_identifier(word: str) -> bool:
    return (
        word not in NOT_IDENTIFIERS
        and word not in NOT_PROJECT_NAMES
        and not TOOL_ID_RE.match(word)
        and not (word.startswith("__") and word.endswith("__"))  # dunders: the language's
    )


def _may_number_lines(text: str) -> bool:
    """False when ``LINE_NUMBER_RE`` finds nothing in ``text``: its prefixes end in "→",
    a tab, or a digit (``\\d``: ``str.isdecimal``) before ": " (plain tests: prose holds
    many ": ", few after a digit)."""
    if "→" in text or "\t" in text:
        return True
    at = text.find(": ", 1)  # (at 0 no digit is before it)
    while at >= 0:
        if text[at - 1].isdecimal():
            return True
        at = text.find(": ", at + 2)
    return False


BASE64_BLOCK = 32  # a 64-character run holds a whole aligned block of 32
_BASE64_BLOCK_RE = re.compile(rf"[A-Za-z0-9+/=]{{{BASE64_BLOCK}}}")


def _may_hold_base64(text: str) -> bool:
    """True when ``BASE64_RE`` finds something in ``text`` (exact): every run of 64 of its
    characters holds a whole aligned block of ``BASE64_BLOCK`` of them, so the pattern is
    tried only around such a block (most texts have none, and a path or a long name makes
    one without a run of 64 around it), not at every position."""
    block = _BASE64_BLOCK_RE.fullmatch
    for start in range(0, len(text) - BASE64_BLOCK + 1, BASE64_BLOCK):
        end = start + BASE64_BLOCK
        # (a run of 64 holding the block lies within 64 characters of either end)
        if block(text, start, end) and BASE64_RE.search(text, max(0, end - 64), start + 64):
            return True
    return False


def _normalise(text: str) -> str:
    if _may_number_lines(text):
        text = LINE_NUMBER_RE.sub("", text)
    if "\\" in text:
        text = ESCAPE_RE.sub(" ", text)
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if len(text) >= 64 and _may_hold_base64(text):
        text = BASE64_RE.sub(" ", text)
    return text


def facts(
    text: str,
    *,
    limit: int | None = None,
    error_width: int = 200,
    kinds: Container[str] | None = None,
) -> Facts:
    """The distinct facts of plain ``text`` in first-seen order (at most ``limit`` per
    kind). No instructions: who wrote a text is not known here (``message_facts``).
    ``kinds``: scan for these kinds only (the others come back empty) — for a text known
    to hold no fact of the others (``cut_version_facts``)."""
    wanted = kinds if kinds is not None else _ALL_KINDS
    text = _normalise(text)
    urls, errors, rest = _urls_and_errors(text, error_width, errors="errors" in wanted)
    commands: list[str] = []
    if "commands" in wanted:
        commands = [c.strip()[:error_width] for c in PROMPT_RE.findall(rest)]
        # an inline command with only flags ("running `cat -n` on a snippet") names a tool,
        # it is no command anyone ran
        commands += [
            c.strip()[:error_width]
            for c in INLINE_COMMAND_RE.findall(rest)
            if not all(arg.startswith("-") for arg in c.split()[1:])
        ]
    paths: list[str] = []
    words = rest  # (without a path fact, ``_outside_paths`` gives ``rest`` back)
    if "paths" in wanted:
        # one scan gives the matches and ``PATH_RE.sub(" ", rest)`` (the same matches, cut out)
        found, cut = _path_scan(rest)
        paths = [p for p in map(_path, found) if p and not _is_product_name(p)]
        # names inside a path or URL are part of that fact, not facts of their own
        words = _outside_paths(rest, found, cut, len(paths))
    return Facts(
        paths=_unique(paths, limit),
        commands=_unique([c for c in commands if c], limit),
        errors=_unique([e for e in errors if e], limit),
        identifiers=_unique((w for w in identifiers_found(words) if _is_identifier(w)), limit)
        if "identifiers" in wanted
        else (),
        numbers=_unique(NUMBER_RE.findall(words), limit) if "numbers" in wanted else (),
        urls=_unique(urls, limit) if "urls" in wanted else (),
    )


_ALL_KINDS = frozenset(KINDS)


def error_facts(text: str, *, error_width: int = 200) -> tuple[str, ...]:
    """``facts(text, error_width=...).errors``, without the scans of the other kinds (a
    probe quotes an output's error line: ``probes.questions.error_line``)."""
    _, errors, _ = _urls_and_errors(_normalise(text), error_width)
    return _unique([e for e in errors if e], None)


def _urls_and_errors(
    text: str, error_width: int, *, errors: bool = True
) -> tuple[list[str], list[str], str]:
    """A normalised text's URLs and error lines (none when not ``errors``), and the text
    without the URLs (what the other patterns scan)."""
    # a URL cut off by an ellipsis is not an address anyone can use
    found_urls, rest = _scan(URL_RE, text) if "http" in text else ([], text)
    urls = [
        _clean_url(u)
        for u in found_urls
        if not u.endswith(("...", "…")) and not BOILERPLATE_URL_RE.match(u)
    ]
    if not errors:
        return urls, [], rest
    lines = [
        line.strip()[:error_width] for line in _error_lines(rest) if not CODE_LINE_RE.search(line)
    ]
    return urls, lines, rest


def _scan(pattern: re.Pattern[str], text: str) -> tuple[list[str], str]:
    """``(pattern.findall(text), pattern.sub(" ", text))`` from one scan (for a pattern
    without groups or empty matches: findall's strings are the matches sub replaces)."""
    found: list[str] = []
    pieces: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        found.append(text[start:end])
        pieces.append(text[last:start])
        last = end
    if not found:
        return found, text
    pieces.append(text[last:])
    return found, " ".join(pieces)


# Lowercased, every error mark holds one of these: a text with none has no error line.
_ERROR_WORDS = ("error", "exception", "fail", "fatal", "panic", "err!", "exit code", "traceback",
                "no such file", "command not found", "permission denied", "segmentation fault",
                "错误", "失败")  # fmt: skip


def _error_lines(text: str) -> list[str]:
    """The lines holding an error mark, each once, in order."""
    low = text.lower()  # lowercasing maps characters one by one: a mark's words stay whole
    for word in _ERROR_WORDS:  # a loop, no generator: this runs for every text scanned
        if word in low:
            return lines_hit(ERROR_RE, text)
    return []


def lines_hit(pattern: re.Pattern[str], text: str) -> list[str]:
    """The lines holding a match of ``pattern``, each once, in order."""
    lines: list[str] = []
    end = -1
    for hit in pattern.finditer(text):
        if hit.start() < end:
            continue  # another mark on a line already taken
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        if end < 0:
            end = len(text)
        lines.append(text[start:end])
    return lines


def _is_product_name(path: str) -> bool:
    """``Next.js``, ``Node.js``, ``Vue.js``: a capitalised bare name ending in .js."""
    return "/" not in path and path[:1].isupper() and path.endswith(".js")


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _part_facts(text: str, error_width: int) -> Facts:
    return facts(text, error_width=error_width)


def facts_of_parts(
    parts: Iterable[str], *, limit: int | None = None, error_width: int = 200
) -> Facts:
    """``facts("\\n".join(parts), ...)``, with each part's facts cached by content.

    Exact: no pattern matches across a newline, and every substitution (line prefixes,
    escapes, URLs, paths) stays within a line, so the matches of the joined text are the
    parts' matches in order. The same messages are summarised again by other strategies
    and later compactions; the cache keeps that work from repeating.
    """
    merged: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for part in parts:
        found = _part_facts(part, error_width)
        for kind in KINDS:
            merged[kind].extend(getattr(found, kind))
    return Facts(**{kind: _unique(values, limit) for kind, values in merged.items()})


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _part_urls_errors(text: str, error_width: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    urls, errors, _rest = _urls_and_errors(_normalise(text), error_width)
    return tuple(urls), tuple(errors)


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _part_critical(text: str, error_width: int) -> tuple[tuple[str, ...], ...]:
    """``facts(text)``'s paths, identifiers, URLs and errors, in ``_CRITICAL`` order:
    the same scans without the command and number patterns, which nobody reads here."""
    urls, errors, rest = _urls_and_errors(_normalise(text), error_width)
    found, cut = _path_scan(rest)
    paths = [p for p in map(_path, found) if p and not _is_product_name(p)]
    words = _outside_paths(rest, found, cut, len(paths))
    return (
        _unique(paths, None),
        _unique((w for w in identifiers_found(words) if _is_identifier(w)), None),
        _unique(urls, None),
        _unique([e for e in errors if e], None),
    )


_CRITICAL = ("paths", "identifiers", "urls", "errors")


def critical_facts_of_parts(parts: Iterable[str], *, limit: int, error_width: int = 200) -> Facts:
    """``facts_of_parts(parts, limit=limit)``'s paths, identifiers, URLs and errors (the
    offline summariser reads no other kind; commands and numbers stay empty).

    Exact and cheaper: the first ``limit`` distinct values of a kind cannot change once
    found, so when paths and identifiers are full a part is scanned for URLs and errors only
    (the path and name patterns cost most), and no part is read once all four are full.
    """
    keep = max(limit, 1)  # ``_unique`` keeps one value even at limit 0
    found: dict[str, dict[str, None]] = {kind: {} for kind in _CRITICAL}
    paths, names, urls, errors = found.values()
    for part in parts:
        if len(paths) < keep or len(names) < keep:
            values = list(_part_critical(part, error_width))
        elif len(urls) < keep or len(errors) < keep:
            values = [(), (), *_part_urls_errors(part, error_width)]
        else:
            break
        for seen, new in zip(found.values(), values, strict=True):
            for value in new:
                if len(seen) >= keep:
                    break
                seen[value] = None
    return Facts(**{kind: tuple(seen) for kind, seen in found.items()})


# --- messages ----------------------------------------------------------------------------


def instructions(text: str, *, width: int = 200) -> tuple[str, ...]:
    """Sentences of user-typed ``text`` that ask for something or constrain it (harness
    lines such as ``<command-name>`` markup and caveats are skipped): the rule lives in
    ``instruction_sentences``, which ``ctxlab statusline`` reads without this module's
    patterns."""
    return instruction_sentences(text, width=width)


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string) for every string in a decoded tool input, protocol fields skipped."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in SKIP_INPUT_KEYS:
                yield from _strings(v, str(k))
    elif isinstance(value, list):
        if key in COMMAND_KEYS and value and all(isinstance(v, str) for v in value):
            yield key, _argv_command(value)
            return
        for v in value:
            yield from _strings(v, key)


def input_strings(value: Any) -> Iterator[str]:
    """The strings of a decoded tool input, in order, protocol fields skipped."""
    return (text for _key, text in _strings(value))


def _argv_command(argv: list[str]) -> str:
    """``["bash", "-lc", "cd x && ls"]`` -> the script; other argv lists joined."""
    if (
        len(argv) >= 3
        and argv[-2] in ("-c", "-lc", "-ic")
        and argv[0].split("/")[-1]
        in (
            "bash",
            "sh",
            "zsh",
        )
    ):
        return argv[-1]
    return shlex.join(argv)


def _decoded_input(block: Block) -> Any:
    tool_input = block.tool_input
    if isinstance(tool_input, str):
        try:
            return json.loads(tool_input)
        except ValueError:
            return tool_input
    return tool_input


def _tool_input_facts(block: Block, width: int = 200) -> frozenset[tuple[str, str]]:
    decoded = _decoded_input(block)
    found: set[tuple[str, str]] = set()
    siblings = set(decoded) if isinstance(decoded, dict) else set()
    for key, value in _strings(decoded):
        if key in COMMAND_KEYS:
            command = _first_command_line(value)
            is_subcommand = " " not in command and bool(siblings & SUBCOMMAND_SIBLINGS)
            if command and not is_subcommand:
                found.add(("commands", command[:width]))
        found.update(facts(value, error_width=width).items())
    return frozenset(found)


def _json_output_facts(text: str) -> frozenset[tuple[str, str]]:
    """A tool output that is JSON: the facts of its string values (keys are schema)."""
    try:
        decoded = json.loads(text)
    except ValueError:
        return frozenset(facts(text).items())
    found: set[tuple[str, str]] = set()
    for _key, value in _strings(decoded):
        found.update(facts(value).items())
    return frozenset(found)


def _first_command_line(script: str) -> str:
    for line in script.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return ""


def _is_user_typed(message: Message) -> bool:
    return harness.typed_by_a_person(message)  # the one rule (``core.harness``)


# Bounds of the fact-set memo: a long-lived worker analyses many transcripts, so the memo
# holds at most this many texts and stands for this many characters of them (least
# recently used go). Keyed by ``textkeys.text_key`` (a 128-bit hash), not the text: the
# memo keeps no text alive, each entry weighs its text's length.
# Sized for one 20,000-message transcript of 1.5 KB texts, so every run of a comparison
# reuses its facts; the fact sets take about 2 bytes per text character (corpus), so the
# memo stays under ~64 MB, and holds none of the texts themselves.
FACT_SET_ENTRIES = 32_768
FACT_SET_CHARS = 32_000_000

FactPair = tuple[str, str]  # (kind, value), kind in KINDS

_FACT_SETS: BoundedLRU[frozenset[FactPair]] = BoundedLRU(FACT_SET_ENTRIES, FACT_SET_CHARS)
# Decoded tool inputs, keyed by their JSON text (a separate memo: the same string read as
# plain text has other facts). Inputs are small next to outputs; a quarter of the bounds.
_INPUT_SETS: BoundedLRU[frozenset[FactPair]] = BoundedLRU(
    FACT_SET_ENTRIES // 4, FACT_SET_CHARS // 4
)
_INSTRUCTION_SETS: BoundedLRU[frozenset[FactPair]] = BoundedLRU(
    FACT_SET_ENTRIES // 4, FACT_SET_CHARS // 8
)


def fact_set(text: str) -> frozenset[FactPair]:
    """``frozenset(facts(text).items())``, memoised by content: the same texts recur across
    the messages of a transcript, its modified versions and every run over it."""
    return _memo(_FACT_SETS, text, lambda: frozenset(facts(text).items()))


# A caller's own memo for one batch of messages (``message_facts(..., local=...)``): the
# import extracts every message once and must not fill the process-wide memos with them.
LocalMemo = dict[tuple[int, str], frozenset[FactPair]]


def _memo(
    memo: BoundedLRU[frozenset[FactPair]],
    text: str,
    derive: Any,
    local: LocalMemo | None = None,
) -> frozenset[FactPair]:
    if local is not None:
        slot = (id(memo), text)
        found = local.get(slot)
        if found is None:
            found = local[slot] = derive()
        return found
    key = text_key(text)
    found = memo.get(key)
    if found is None:
        found = derive()
        memo.set(key, found, weight=len(text))
    return found


def block_facts(
    block: Block, *, user_typed: bool = False, local: LocalMemo | None = None
) -> frozenset[FactPair]:
    """The facts of one block: a tool call's decoded input, other blocks' text (and, for
    text the user typed, its instructions). ``local``: memoise in this dict instead of the
    process-wide memos."""
    if block.kind is BlockKind.TOOL_USE:
        key = block.input_json
        return _memo(_INPUT_SETS, key, lambda: _tool_input_facts(block), local)
    if not block.text or block.kind in (BlockKind.MEDIA, BlockKind.OPAQUE):
        return frozenset()
    text = block.text
    if block.kind is BlockKind.TOOL_RESULT and text.lstrip()[:1] in ("{", "["):
        return _memo(_INPUT_SETS, text, lambda: _json_output_facts(text), local)
    found = _memo(_FACT_SETS, text, lambda: frozenset(facts(text).items()), local)
    if user_typed and block.kind is BlockKind.TEXT:
        found = found | _memo(
            _INSTRUCTION_SETS,
            text,
            lambda: frozenset(("instructions", s) for s in instructions(text)),
            local,
        )
    return found


def message_facts(message: Message, *, local: LocalMemo | None = None) -> frozenset[FactPair]:
    """Every fact of ``message``: its texts, tool outputs and decoded tool inputs
    (``local``: see ``block_facts``)."""
    user_typed = _is_user_typed(message)
    blocks = message.blocks
    if len(blocks) == 1:
        return block_facts(blocks[0], user_typed=user_typed, local=local)
    found: set[FactPair] = set()
    for block in blocks:
        found.update(block_facts(block, user_typed=user_typed, local=local))
    return frozenset(found)


def cut_version_facts(
    original: Message, version: Message, original_facts: frozenset[FactPair]
) -> frozenset[FactPair] | None:
    """``message_facts(version)`` for tool outputs cut from ``original``'s (a truncation
    keeps each output's head and appends a notice) whose facts are ``original_facts``;
    None when ``version`` is not such a cut (the caller scans it in full).

    Facts are found line by line (``facts_of_parts``: no pattern crosses a newline, no
    substitution leaves a line, every whole-text test only skips a scan that would find
    nothing), so the facts of the whole lines an output shares with its original are
    among the original's: a kind the original has none of is not scanned for there. The
    rest (the line cut short, the notice) is scanned in full."""
    if len(original.blocks) != len(version.blocks):
        return None
    cuts: list[tuple[str, int]] = []
    for before, after in zip(original.blocks, version.blocks, strict=True):
        if before.kind is not BlockKind.TOOL_RESULT or after.kind is not BlockKind.TOOL_RESULT:
            return None
        old, text = before.text, after.text
        # (an output that reads as JSON has the facts of its values: not line by line)
        if old.lstrip()[:1] in ("{", "[") or text.lstrip()[:1] in ("{", "["):
            return None
        cuts.append((text, text.rfind("\n", 0, _common_prefix(old, text)) + 1))
    if not any(head for _, head in cuts):
        return None  # no whole line kept: nothing to gain
    kinds = {kind for kind, _ in original_facts}
    found: set[FactPair] = set()
    for text, head in cuts:
        if text:  # (an empty output has no facts: ``block_facts``)
            found.update(_cut_facts(text, head, kinds))
    return frozenset(found)


def _cut_facts(text: str, head: int, kinds: set[str]) -> frozenset[FactPair]:
    """``fact_set(text)`` when ``text[:head]`` is whole lines holding only facts of
    ``kinds`` (memoised as ``fact_set``: ``block_facts`` reads the same memo)."""
    key = text_key(text)
    found = _FACT_SETS.get(key)
    if found is None:
        found = frozenset((*facts(text[:head], kinds=kinds).items(), *facts(text[head:]).items()))
        _FACT_SETS.set(key, found, weight=len(text))
    return found


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (halving: C-level
    compares of slices, no Python loop over characters)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def clear_caches() -> None:
    """Forget cached facts (benchmarks start cold)."""
    _part_facts.cache_clear()
    _part_urls_errors.cache_clear()
    _part_critical.cache_clear()
    _FACT_SETS.clear()
    _INPUT_SETS.clear()
    _INSTRUCTION_SETS.clear()
    clear_word_sets()
