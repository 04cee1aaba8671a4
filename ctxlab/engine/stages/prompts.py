"""Compaction prompts of QwenPaw and ReMe (CoPaw), in English and Chinese, byte for byte.

The texts are read from the originals' own files, shipped unmodified in
``ctxlab/engine/data/prompts/`` (Apache-2.0; see NOTICE and the LICENSE files there):

* QwenPaw 1.1.9 (``qwenpaw==1.1.9`` wheel, not 1.1.9b1): ``qwenpaw/agents/context/
  compactor_prompts.py``, sha256 ``QWENPAW_SHA256``. Its string constants are read with
  ``ast`` (never executed).
* ReMe 0.3.0.6b3 (``reme-ai==0.3.0.6b3`` wheel, used by CoPaw 0.0.7):
  ``reme/memory/file_based/components/compactor.yaml``, sha256 ``REME_SHA256``, read with
  ``yaml.safe_load`` and looked up as ReMe's ``PromptHandler.get_prompt`` does (the
  ``_zh`` key for language ``zh``, else the base key; the value ``.strip()``-ed).

The user messages are assembled as the originals' code does (``qwenpaw_user`` after
``light_context_manager.py``, ``reme_user`` after ``reme/.../components/compactor.py``).

The prompt constants (``QWENPAW_SYSTEM``, ``REME_SYSTEM``, ...) are read on first use
(PEP 562 ``__getattr__``), not when the strategy registry loads: reading and checking the
files and loading yaml cost every ``python -m ctxlab.engine`` start (``replay --help``).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..core.summary_request import Section

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
QWENPAW_FILE = DATA / "qwenpaw-1.1.9-compactor_prompts.py.txt"
QWENPAW_SHA256 = "a661089df234a99e6aad5cd511788a1e8f2ba858f7088a4d5d94281d8611fbf7"
REME_FILE = DATA / "reme-0.3.0.6b3-compactor.yaml"
REME_SHA256 = "7a755d0e83a1c9d7d6ef8c0cbe3f371e681a376bc2797804c4efe9579aca027c"


def _read(path: Path, sha256: str) -> str:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:  # a damaged or edited copy would silently change every request
        raise RuntimeError(f"{path.name}: sha256 {digest} is not the pinned {sha256}")
    return data.decode("utf-8")


@cache
def qwenpaw_constants() -> dict[str, str]:
    """The module-level string constants of QwenPaw's ``compactor_prompts.py``."""
    tree = ast.parse(_read(QWENPAW_FILE, QWENPAW_SHA256))
    out: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out[node.targets[0].id] = node.value.value
    return out


@cache
def reme_yaml() -> dict[str, str]:
    import yaml

    loaded = yaml.safe_load(_read(REME_FILE, REME_SHA256))
    return {k: v for k, v in loaded.items() if isinstance(v, str)}


def reme_prompt(name: str, lang: str) -> str:
    """ReMe's ``PromptHandler.get_prompt`` for the compactor: ``Compactor`` is built with
    ``language="zh"`` for zh and ``""`` otherwise."""
    prompts = reme_yaml()
    if lang == "zh" and f"{name}_zh" in prompts:
        return prompts[f"{name}_zh"].strip()
    return prompts[name].strip()


def _qwenpaw(name: str) -> dict[str, str]:
    q = qwenpaw_constants()
    return {"en": q[f"{name}_EN"], "zh": q[f"{name}_ZH"]}


def _reme(name: str) -> dict[str, str]:
    return {lang: reme_prompt(name, lang) for lang in ("en", "zh")}


# Each constant: the function that reads it, once (``__getattr__`` stores the value).
_READ: dict[str, Callable[[], object]] = {
    # --- QwenPaw 1.1.9 --------------------------------------------------------------------
    "QWENPAW_SYSTEM": lambda: _qwenpaw("SYSTEM_PROMPT"),
    "QWENPAW_INITIAL": lambda: _qwenpaw("INITIAL_USER_MESSAGE"),
    "QWENPAW_UPDATE": lambda: _qwenpaw("UPDATE_USER_MESSAGE"),
    # Always English in QwenPaw (agent_context.py uses SUMMARY_PROMPT_EN): how the summary
    # re-enters the prompt. Its dialog path is literal text ("dialog/YYYY-MM-DD.jsonl").
    "QWENPAW_SUMMARY_TEMPLATE": lambda: qwenpaw_constants()["SUMMARY_PROMPT_EN"],
    # the custom strategy's summarise stage uses QwenPaw's
    "COMPACTOR_SYSTEM": lambda: _constant("QWENPAW_SYSTEM"),
    # --- ReMe 0.3.0.6b3 -------------------------------------------------------------------
    "REME_SYSTEM": lambda: _reme("system_prompt"),
    "REME_INITIAL": lambda: _reme("initial_user_message"),
    "REME_UPDATE_PREFIX": lambda: _reme("update_user_message_prefix"),
    "REME_UPDATE_SUFFIX": lambda: _reme("update_user_message_suffix"),
}

if TYPE_CHECKING:  # the types of the constants other modules read
    QWENPAW_SYSTEM: dict[str, str]
    QWENPAW_INITIAL: dict[str, str]
    QWENPAW_UPDATE: dict[str, str]
    QWENPAW_SUMMARY_TEMPLATE: str
    COMPACTOR_SYSTEM: dict[str, str]
    REME_SYSTEM: dict[str, str]
    REME_UPDATE_SUFFIX: dict[str, str]


def __getattr__(name: str) -> object:
    read = _READ.get(name)
    if read is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = read()
    return value


def _constant(name: str) -> dict[str, str]:
    """A per-language prompt for this module's own functions (a global name skips
    ``__getattr__``)."""
    return cast(dict[str, str], globals()[name] if name in globals() else __getattr__(name))


def qwenpaw_user(history: str, previous: str, lang: str) -> str:
    """``LightContextManager``'s compactor user message (no extra instruction)."""
    if previous:
        return f"# conversation\n{history}\n\n# previous-summary\n{previous}\n\n{_constant('QWENPAW_UPDATE')[lang]}"
    return f"# conversation\n{history}\n\n{_constant('QWENPAW_INITIAL')[lang]}"


# reme_in_memory_memory.get_memory: the summary message (stripped as a whole).
REME_SUMMARY_TEMPLATE = (
    "<previous-summary>\n{summary}\n</previous-summary>\n"
    "The above is a summary of our previous conversation.\n"
    "Use it as context to maintain continuity."
)


def reme_user(history: str, previous: str, lang: str) -> str:
    """ReMe ``Compactor.execute``'s user message."""
    if previous:
        return (
            f"<conversation>\n{history}\n</conversation>\n\n"
            f"{_constant('REME_UPDATE_PREFIX')[lang]}\n\n"
            f"<previous-summary>\n{previous}\n</previous-summary>\n\n"
            f"{_constant('REME_UPDATE_SUFFIX')[lang]}"
        )
    return f"<conversation>\n{history}\n</conversation>\n\n" + _constant("REME_INITIAL")[lang]


# Section headers of the originals' output format (the offline summariser writes them).
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
        Section("## 约束和偏好", "constraints"),
        Section("## 进展", "none"),
        Section("### 已完成", "done"),
        Section("### 进行中", "in_progress"),
        Section("### 阻塞", "blocked"),
        Section("## 关键决策", "decisions"),
        Section("## 下一步", "next"),
        Section("## 关键上下文", "critical"),
    ),
}


def lang_key(language: str) -> str:
    """``zh`` selects the Chinese prompts; anything else the English ones."""
    return "zh" if language == "zh" else "en"
