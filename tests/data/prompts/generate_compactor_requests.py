"""Regenerate compactor_requests.json from the originals' own files (development time only).

    pip download qwenpaw==1.1.9 reme-ai==0.3.0.6b3 --no-deps -d /tmp/wheels
    cd /tmp/wheels && unzip -q qwenpaw-1.1.9-*.whl -d qwenpaw && unzip -q reme_ai-*.whl -d reme
    git -C <chatgpt-on-wechat clone> show 55aaf60:agent/memory/summarizer.py > /tmp/cow.py
    python tests/data/prompts/generate_compactor_requests.py \\
        /tmp/wheels/qwenpaw/qwenpaw/agents/context/compactor_prompts.py \\
        /tmp/wheels/reme/reme/memory/file_based/components/compactor.yaml /tmp/cow.py

QwenPaw's prompt module has no imports and is loaded as it is; ReMe's YAML is read with
yaml.safe_load and looked up with the lines of ReMe's PromptHandler.get_prompt; CowAgent's
module is parsed (its imports are not available here). The request assembly below repeats
the originals' lines (QwenPaw 1.1.9 light_context_manager.py ``_compact``; ReMe 0.3.0.6b3
components/compactor.py ``Compactor.execute``; CowAgent summarizer.py
``_call_llm_for_summary``), Apache-2.0 / MIT, quoted for the fixture only. ctxlab's own code
is not used, so the fixture is an independent witness of the bytes.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import yaml

HISTORY = "[2026-01-02 03:04:05.678] user:\n[text]: 修复 src/app.py 里的 KeyError: 'id'"
PREVIOUS = "## Goal\nFix the KeyError in src/app.py"
CONVERSATION = "用户: 修复 src/app.py\n助手: 已修复 KeyError"


def qwenpaw(path: Path) -> dict[str, dict[str, str]]:
    spec = importlib.util.spec_from_file_location("compactor_prompts", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {}
    for language in ("zh", "en"):
        # light_context_manager.py: is_zh = language.lower() == "zh"
        is_zh = language.lower() == "zh"
        system_prompt = mod.SYSTEM_PROMPT_ZH if is_zh else mod.SYSTEM_PROMPT_EN
        initial_user_msg = mod.INITIAL_USER_MESSAGE_ZH if is_zh else mod.INITIAL_USER_MESSAGE_EN
        update_user_msg = mod.UPDATE_USER_MESSAGE_ZH if is_zh else mod.UPDATE_USER_MESSAGE_EN
        history_formatted_str, previous_summary = HISTORY, PREVIOUS
        update = (
            f"# conversation\n{history_formatted_str}\n\n"
            f"# previous-summary\n{previous_summary}\n\n{update_user_msg}"
        )
        initial = f"# conversation\n{history_formatted_str}\n\n{initial_user_msg}"
        out[language] = {"system": system_prompt, "initial": initial, "update": update}
    out["summary_template"] = {"en": mod.SUMMARY_PROMPT_EN}
    return out


def reme(path: Path) -> dict[str, dict[str, str]]:
    prompts = {
        k: v for k, v in yaml.safe_load(path.read_text("utf-8")).items() if isinstance(v, str)
    }

    def get_prompt(prompt_name: str, language: str) -> str:  # PromptHandler.get_prompt
        if language and not prompt_name.endswith(f"_{language}"):
            key_with_lang = f"{prompt_name}_{language}"
            if key_with_lang in prompts:
                return prompts[key_with_lang].strip()
        return prompts[prompt_name].strip()

    out = {}
    for lang in ("zh", "en"):
        language = lang if lang == "zh" else ""  # ReMeLight.compact_memory
        history_formatted_str, previous_summary = HISTORY, PREVIOUS
        prefix = get_prompt("update_user_message_prefix", language)
        suffix = get_prompt("update_user_message_suffix", language)
        update = (
            f"<conversation>\n{history_formatted_str}\n</conversation>\n\n"
            f"{prefix}\n\n"
            f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
            f"{suffix}"
        )
        initial = f"<conversation>\n{history_formatted_str}\n</conversation>\n\n" + get_prompt(
            "initial_user_message", language
        )
        out[lang] = {
            "system": get_prompt("system_prompt", language),
            "initial": initial,
            "update": update,
        }
    return out


def cowagent(path: Path) -> dict[str, str]:
    consts = {
        n.targets[0].id: n.value.value
        for n in ast.parse(path.read_text("utf-8")).body
        if isinstance(n, ast.Assign)
        and isinstance(n.targets[0], ast.Name)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
    }
    user = consts["SUMMARIZE_USER_PROMPT"].format(conversation=CONVERSATION)
    return {"system": consts["SUMMARIZE_SYSTEM_PROMPT"], "user": user}


def main(qwenpaw_py: str, reme_yaml: str, cow_py: str) -> None:
    sources = {
        p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (qwenpaw_py, reme_yaml, cow_py)
    }
    fixture = {
        "inputs": {"history": HISTORY, "previous": PREVIOUS, "conversation": CONVERSATION},
        "sources_sha256": {Path(p).name: h for p, h in sources.items()},
        "qwenpaw": qwenpaw(Path(qwenpaw_py)),
        "reme": reme(Path(reme_yaml)),
        "cowagent": cowagent(Path(cow_py)),
    }
    out = Path(__file__).with_name("compactor_requests.json")
    out.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
