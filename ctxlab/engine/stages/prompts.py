"""Compaction prompts of QwenPaw and ReMe (CoPaw), in English and Chinese.

Headers, section names and quoted lines follow the originals (strategies.md §2.6, §3.6);
the remaining wording is ours, written to the same structure. The Chinese renderings are
ours too (the originals' default language is ``zh``).
"""

from __future__ import annotations

from ..summarizers import Section

COMPACTOR_SYSTEM = {
    "en": "You are a context compaction assistant. Your role is to create structured "
    "summaries of conversations\nthat can be used to restore context in future sessions. "
    "Focus on preserving critical information while reducing token count.",
    "zh": "你是一个上下文压缩助手。你的职责是为对话生成结构化摘要，\n"
    "以便在后续会话中恢复上下文。在减少 token 数量的同时，重点保留关键信息。",
}

_FORMAT_EN = """## Goal
[What the user is trying to accomplish]

## Constraints & Preferences
- [Constraint or preference stated by the user, or "(none)"]

## Progress
### Done
- [x] [Completed task]

### In Progress
- [ ] [Current task]

### Blocked
- [Blocker, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered next action]

## Critical Context
- [Data, references or identifiers needed to continue, or "(none)"]"""

_FORMAT_UPDATE_EN = """## Goal
[Preserve the existing goal; refine it only if the user changed it]

## Constraints & Preferences
- [Preserve existing constraints; add new ones, or "(none)"]

## Progress
### Done
- [x] [Preserve existing done items; add newly completed tasks]

### In Progress
- [ ] [Current task]

### Blocked
- [Blocker, if any]

## Key Decisions
- **[Decision]**: [Preserve existing decisions; add new ones with a brief rationale]

## Next Steps
1. [Updated ordered next actions]

## Critical Context
- [Preserve existing context; add new data, references or identifiers, or "(none)"]"""

_FORMAT_ZH = """## 目标
[用户想要完成的事情]

## 约束与偏好
- [用户提出的约束或偏好，若无则写“（无）”]

## 进展
### 已完成
- [x] [已完成的任务]

### 进行中
- [ ] [当前任务]

### 受阻
- [阻碍（如有）]

## 关键决策
- **[决策]**：[简要理由]

## 下一步
1. [按顺序列出的后续动作]

## 关键上下文
- [继续工作所需的数据、引用或标识符，若无则写“（无）”]"""

_FORMAT_UPDATE_ZH = """## 目标
[保留已有目标；仅当用户改变目标时再修订]

## 约束与偏好
- [保留已有约束；补充新的约束，若无则写“（无）”]

## 进展
### 已完成
- [x] [保留已完成事项；补充新完成的任务]

### 进行中
- [ ] [当前任务]

### 受阻
- [阻碍（如有）]

## 关键决策
- **[决策]**：[保留已有决策；补充新决策及简要理由]

## 下一步
1. [更新后的后续动作]

## 关键上下文
- [保留已有上下文；补充新的数据、引用或标识符，若无则写“（无）”]"""

SECTIONS = {
    "en": (
        Section("## Goal", "goal"),
        Section("## Constraints & Preferences", "constraints"),
        Section("## Progress", "none"),
        Section("### Done", "done"),
        Section("### In Progress", "in_progress"),
        Section("### Blocked", "blocked"),
        Section("## Key Decisions", "decisions"),
        Section("## Next Steps", "next"),
        Section("## Critical Context", "critical"),
    ),
    "zh": (
        Section("## 目标", "goal"),
        Section("## 约束与偏好", "constraints"),
        Section("## 进展", "none"),
        Section("### 已完成", "done"),
        Section("### 进行中", "in_progress"),
        Section("### 受阻", "blocked"),
        Section("## 关键决策", "decisions"),
        Section("## 下一步", "next"),
        Section("## 关键上下文", "critical"),
    ),
}

# --- QwenPaw (compactor_prompts.py) -------------------------------------------------------
QWENPAW_INITIAL = {
    "en": "# Task\nCreate a structured summary from the conversation above.\n\n"
    "# Rules:\n- Keep every section concise.\n"
    "- Preserve exact file paths, function names and error messages.\n\n"
    f"# Output Format:\n{_FORMAT_EN}\n\n"
    "Output the structured summary following the format above.",
    "zh": "# 任务\n根据上面的对话生成一份结构化摘要。\n\n"
    "# 规则：\n- 每个部分保持简洁。\n- 准确保留文件路径、函数名和错误信息。\n\n"
    f"# 输出格式：\n{_FORMAT_ZH}\n\n"
    "请按照上述格式输出结构化摘要。",
}
QWENPAW_UPDATE = {
    "en": "# Task\nUpdate the previous summary with the conversation above.\n\n"
    "# Rules:\n- Preserve all existing information from the previous summary.\n"
    "- Add new progress, decisions and context from the conversation.\n"
    "- Move items from In Progress to Done when they are completed.\n"
    "- Update Next Steps based on what was accomplished.\n"
    "- Preserve exact file paths, function names and error messages.\n"
    "- Items that are no longer relevant may be removed.\n\n"
    f"# Output Format:\n{_FORMAT_UPDATE_EN}\n\n"
    "Output the structured summary following the format above.",
    "zh": "# 任务\n根据上面的对话更新之前的摘要。\n\n"
    "# 规则：\n- 保留之前摘要中的全部已有信息。\n- 补充对话中新的进展、决策和上下文。\n"
    "- 已完成的事项从“进行中”移到“已完成”。\n- 根据已完成的工作更新“下一步”。\n"
    "- 准确保留文件路径、函数名和错误信息。\n- 不再相关的条目可以删除。\n\n"
    f"# 输出格式：\n{_FORMAT_UPDATE_ZH}\n\n"
    "请按照上述格式输出结构化摘要。",
}

# Always English in QwenPaw (SUMMARY_PROMPT_EN): how the summary re-enters the prompt.
QWENPAW_SUMMARY_TEMPLATE = (
    "# Summary of previous conversation\n"
    "Previous conversation logs are offloaded to {dialog_path}/YYYY-MM-DD.jsonl "
    "(or nearby date files).\n"
    "Here is the summary:\n"
    "{summary}\n"
    "The above is a summary of previous conversation, use it as context to maintain continuity."
)

# --- ReMe 0.3.0.6b3 (compactor.yaml) -------------------------------------------------------
# YAML "|" block scalars keep one trailing newline on each piece.
REME_INITIAL = {
    "en": "The messages above are a conversation to summarize. Create a structured context "
    "checkpoint summary that another LLM will use to continue the work.\n\n"
    f"Use this EXACT format:\n\n{_FORMAT_EN}\n\n"
    "Keep each section concise. Preserve exact file paths, function names, and error messages.\n",
    "zh": "上面的消息是需要总结的对话。请创建一份结构化的上下文检查点摘要，"
    "另一个 LLM 将用它继续工作。\n\n"
    f"请严格使用以下格式：\n\n{_FORMAT_ZH}\n\n"
    "每个部分保持简洁。准确保留文件路径、函数名和错误信息。\n",
}
REME_UPDATE_PREFIX = {
    "en": "The messages above are NEW conversation messages to incorporate into the existing "
    "summary provided in <previous-summary> tags.\n",
    "zh": "上面的消息是需要并入已有摘要的新对话消息，已有摘要位于 <previous-summary> 标签中。\n",
}
REME_UPDATE_SUFFIX = {
    "en": "Update the existing structured summary with the new information. RULES:\n"
    "- PRESERVE all existing information from the previous summary\n"
    "- ADD new progress, decisions, and context from the new messages\n"
    "- UPDATE the Progress section: move items from In Progress to Done when completed\n"
    "- UPDATE Next Steps based on what was accomplished\n"
    "- PRESERVE exact file paths, function names, and error messages\n"
    "- If something is no longer relevant, you may remove it\n\n"
    f"Use this EXACT format:\n\n{_FORMAT_UPDATE_EN}\n\n"
    "Keep each section concise. Preserve exact file paths, function names, and error messages.\n",
    "zh": "用新信息更新已有的结构化摘要。规则：\n"
    "- 保留之前摘要中的全部已有信息\n"
    "- 补充新消息中的进展、决策和上下文\n"
    "- 更新“进展”部分：已完成的事项从“进行中”移到“已完成”\n"
    "- 根据已完成的工作更新“下一步”\n"
    "- 准确保留文件路径、函数名和错误信息\n"
    "- 不再相关的内容可以删除\n\n"
    f"请严格使用以下格式：\n\n{_FORMAT_UPDATE_ZH}\n\n"
    "每个部分保持简洁。准确保留文件路径、函数名和错误信息。\n",
}
REME_SUMMARY_TEMPLATE = (
    "<previous-summary>\n{summary}\n</previous-summary>\n"
    "The above is a summary of our previous conversation.\n"
    "Use it as context to maintain continuity."
)


def lang_key(language: str) -> str:
    """``zh`` selects the Chinese prompts; anything else the English ones."""
    return "zh" if language == "zh" else "en"
