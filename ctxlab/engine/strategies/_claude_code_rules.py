"""Claude Code's compact prompt and summary message, byte-exact (see claude_code.py).

Sources (reverse-engineered; Claude Code is closed source):

- ``2.1.88``: ``src/services/compact/prompt.ts`` of the Claude Code 2.1.88 source tree
  published from its npm source map (March 2026), as mirrored e.g. at
  https://github.com/BelovedYaoo/claude-code-source (commit 17bce739) and
  https://github.com/DroxKiwi/claude-code-leak-packaged/blob/fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b/src/services/compact/prompt.ts
  (two mirrors agree on every string quoted here): ``NO_TOOLS_PREAMBLE`` +
  ``BASE_COMPACT_PROMPT`` (+ ``Additional Instructions``) + ``NO_TOOLS_TRAILER``;
  ``formatCompactSummary`` strips ``<analysis>``; ``getCompactUserSummaryMessage``.
- ``2.0``: the same functions in a deobfuscated 2.0.x ``cli.js`` (``R91`` / ``MD5`` /
  ``T91``, stored in the public-code index used for this work; its repository could not
  be named): no preamble/trailer, the 2-space ``- Errors`` lines, the duplicated ``6.``
  numbering, ``<analysis>`` kept as ``Analysis:``, "The conversation is summarized below:".
- ``2.1``: the summary message of CLI 2.1.7-2.1.42 as real transcripts hold it (entireio/cli
  checkpoints, see _claude_code_versions): the 2.1.88 preamble, the analysis kept as
  ``Analysis:``, the transcript hint, then the 2.0 closing sentence. Its compact prompt is
  not published: the 2.1.88 one stands in.
- Shared text checked against a real wire capture in this repository:
  ``tests/data/corpus/anthropic-messages/claude-trace-req34-request.json`` (a mid-2025
  7-section version: its first paragraph, the "9. Optional Next Step" continuation line,
  the example head and everything from "Please provide your summary" on are identical).
"""

from __future__ import annotations

import re

VERSIONS = ("2.1.88", "2.1", "2.0")
# Versions whose compact prompt is the 2.1.88 text (for "2.1", the nearest published one).
_NEW_PROMPT = ("2.1.88", "2.1")

BASE_COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.\n"
    "This summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing development work without losing context.\n"
    "\n"
    "Before providing your final summary, wrap your analysis in <analysis> tags to organize your thoughts and ensure you've covered all necessary points. In your analysis process:\n"
    "\n"
    "1. Chronologically analyze each message and section of the conversation. For each section thoroughly identify:\n"
    "   - The user's explicit requests and intents\n"
    "   - Your approach to addressing the user's requests\n"
    "   - Key decisions, technical concepts and code patterns\n"
    "   - Specific details like:\n"
    "     - file names\n"
    "     - full code snippets\n"
    "     - function signatures\n"
    "     - file edits\n"
    "   - Errors that you ran into and how you fixed them\n"
    "   - Pay special attention to specific user feedback that you received, especially if the user told you to do something differently.\n"
    "2. Double-check for technical accuracy and completeness, addressing each required element thoroughly.\n"
    "\n"
    "Your summary should include the following sections:\n"
    "\n"
    "1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail\n"
    "2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.\n"
    "3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created. Pay special attention to the most recent messages and include full code snippets where applicable and include a summary of why this file read or edit is important.\n"
    "4. Errors and fixes: List all errors that you ran into, and how you fixed them. Pay special attention to specific user feedback that you received, especially if the user told you to do something differently.\n"
    "5. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.\n"
    "6. All user messages: List ALL user messages that are not tool results. These are critical for understanding the users' feedback and changing intent.\n"
    "7. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.\n"
    "8. Current Work: Describe in detail precisely what was being worked on immediately before this summary request, paying special attention to the most recent messages from both user and assistant. Include file names and code snippets where applicable.\n"
    "9. Optional Next Step: List the next step that you will take that is related to the most recent work you were doing. IMPORTANT: ensure that this step is DIRECTLY in line with the user's most recent explicit requests, and the task you were working on immediately before this summary request. If your last task was concluded, then only list next steps if they are explicitly in line with the users request. Do not start on tangential requests or really old requests that were already completed without confirming with the user first.\n"
    "                       If there is a next step, include direct quotes from the most recent conversation showing exactly what task you were working on and where you left off. This should be verbatim to ensure there's no drift in task interpretation.\n"
    "\n"
    "Here's an example of how your output should be structured:\n"
    "\n"
    "<example>\n"
    "<analysis>\n"
    "[Your thought process, ensuring all points are covered thoroughly and accurately]\n"
    "</analysis>\n"
    "\n"
    "<summary>\n"
    "1. Primary Request and Intent:\n"
    "   [Detailed description]\n"
    "\n"
    "2. Key Technical Concepts:\n"
    "   - [Concept 1]\n"
    "   - [Concept 2]\n"
    "   - [...]\n"
    "\n"
    "3. Files and Code Sections:\n"
    "   - [File Name 1]\n"
    "      - [Summary of why this file is important]\n"
    "      - [Summary of the changes made to this file, if any]\n"
    "      - [Important Code Snippet]\n"
    "   - [File Name 2]\n"
    "      - [Important Code Snippet]\n"
    "   - [...]\n"
    "\n"
    "4. Errors and fixes:\n"
    "    - [Detailed description of error 1]:\n"
    "      - [How you fixed the error]\n"
    "      - [User feedback on the error if any]\n"
    "    - [...]\n"
    "\n"
    "5. Problem Solving:\n"
    "   [Description of solved problems and ongoing troubleshooting]\n"
    "\n"
    "6. All user messages: \n"
    "    - [Detailed non tool use user message]\n"
    "    - [...]\n"
    "\n"
    "7. Pending Tasks:\n"
    "   - [Task 1]\n"
    "   - [Task 2]\n"
    "   - [...]\n"
    "\n"
    "8. Current Work:\n"
    "   [Precise description of current work]\n"
    "\n"
    "9. Optional Next Step:\n"
    "   [Optional Next step to take]\n"
    "\n"
    "</summary>\n"
    "</example>\n"
    "\n"
    "Please provide your summary based on the conversation so far, following this structure and ensuring precision and thoroughness in your response. \n"
    "\n"
    "There may be additional summarization instructions provided in the included context. If so, remember to follow these instructions when creating the above summary. Examples of instructions include:\n"
    "<example>\n"
    "## Compact Instructions\n"
    "When summarizing the conversation focus on typescript code changes and also remember the mistakes you made and how you fixed them.\n"
    "</example>\n"
    "\n"
    "<example>\n"
    "# Summary instructions\n"
    "When you are using compact - please focus on test output and code changes. Include file reads verbatim.\n"
    "</example>\n"
)

# 2.0.x differs in two places of the same text (asserted so a typo cannot slip through).
_V20_EDITS = (
    ("\n   - Errors that you ran into", "\n  - Errors that you ran into"),
    ("\n   - Pay special attention", "\n  - Pay special attention"),
    ("\n7. Pending Tasks: Outline", "\n6. Pending Tasks: Outline"),
    ("\n8. Current Work: Describe", "\n7. Current Work: Describe"),
    ("\n9. Optional Next Step: List", "\n8. Optional Next Step: List"),
)


def _v20(text: str) -> str:
    for old, new in _V20_EDITS:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


BASE_COMPACT_PROMPT_V20 = _v20(BASE_COMPACT_PROMPT)

NO_TOOLS_PREAMBLE = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n"
    "\n"
    "- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n"
    "- You already have all the context you need in the conversation above.\n"
    "- Tool calls will be REJECTED and will waste your only turn \u2014 you will fail the task.\n"
    "- Your entire response must be plain text: an <analysis> block followed by a <summary> "
    "block.\n"
    "\n"
)
NO_TOOLS_TRAILER = (
    "\n\nREMINDER: Do NOT call any tools. Respond with plain text only \u2014 "
    "an <analysis> block followed by a <summary> block. "
    "Tool calls will be rejected and you will fail the task."
)
ADDITIONAL_INSTRUCTIONS = "\n\nAdditional Instructions:\n"
# The fallback (non-forked) summary call's system prompt; 2.0-era calls used it too.
SUMMARY_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."

PREAMBLE = {
    "2.1.88": "This session is being continued from a previous conversation that ran out of "
    "context. The summary below covers the earlier portion of the conversation.\n\n",
    "2.0": "This session is being continued from a previous conversation that ran out of "
    "context. The conversation is summarized below:\n",
}
TRANSCRIPT_HINT = (
    "\n\nIf you need specific details from before compaction (like exact code snippets, error "
    "messages, or content you generated), read the full transcript at: "
)
CONTINUE = {
    "2.1.88": "\nContinue the conversation from where it left off without asking the user any "
    "further questions. Resume directly \u2014 do not acknowledge the summary, do not recap "
    'what was happening, do not preface with "I\'ll continue" or similar. Pick up the last '
    "task as if the break never happened.",
    "2.0": "\nPlease continue the conversation from where we left it off without asking the "
    "user any further questions. Continue with the last task that you were asked to work on.",
}

_ANALYSIS = re.compile(r"<analysis>([\s\S]*?)</analysis>")
_SUMMARY = re.compile(r"<summary>([\s\S]*?)</summary>")
_BLANKS = re.compile(r"\n\n+")


def compact_prompt(version: str, custom_instructions: str = "") -> str:
    """``getCompactPrompt`` (2.1.88) / ``R91`` (2.0): the user message closing the request."""
    new = version in _NEW_PROMPT
    body = BASE_COMPACT_PROMPT if new else BASE_COMPACT_PROMPT_V20
    prompt = NO_TOOLS_PREAMBLE + body if new else body
    if custom_instructions.strip():
        prompt += ADDITIONAL_INSTRUCTIONS + custom_instructions
    return prompt + NO_TOOLS_TRAILER if new else prompt


def format_compact_summary(version: str, summary: str) -> str:
    """``formatCompactSummary`` (2.1.88 drops the analysis) / ``MD5`` (2.0 keeps it as
    ``Analysis:``); first match only, as JavaScript's ``replace`` with a plain regex."""
    text = summary
    analysis = _ANALYSIS.search(text)
    if analysis:
        kept = "" if version == "2.1.88" else "Analysis:\n" + analysis.group(1).strip()
        text = text[: analysis.start()] + kept + text[analysis.end() :]
    found = _SUMMARY.search(text)
    if found:
        text = text[: found.start()] + "Summary:\n" + found.group(1).strip() + text[found.end() :]
    return _BLANKS.sub("\n\n", text).strip()


def summary_message(version: str, summary: str, transcript_path: str = "") -> str:
    """``getCompactUserSummaryMessage`` as auto-compact calls it (follow-up questions
    suppressed; 2.1.88 passes the transcript path)."""
    formatted = format_compact_summary(version, summary)
    if version == "2.0":  # 2.1.0-2.1.6 quote the transcript path (2.0.x do not)
        hint = TRANSCRIPT_HINT + transcript_path if transcript_path else ""
        return PREAMBLE["2.0"] + formatted + "." + hint + CONTINUE["2.0"]
    if version == "2.1":
        hint = TRANSCRIPT_HINT + transcript_path if transcript_path else ""
        return PREAMBLE["2.1.88"] + formatted + hint + CONTINUE["2.0"]
    text = PREAMBLE["2.1.88"] + formatted
    if transcript_path:
        text += TRANSCRIPT_HINT + transcript_path
    return text + CONTINUE["2.1.88"]
