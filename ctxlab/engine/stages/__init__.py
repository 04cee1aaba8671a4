"""Reusable compaction stages (truncate, offload, prune, drop turns, summarise ...).

``markers`` holds byte-exact text routines; ``split`` the cut-point searches;
``agentscope`` the Msg adapter shared by QwenPaw and CoPaw; ``prune`` OpenCode's
tool-output prune walk (OpenCode and the custom strategy); ``js_text`` JavaScript string
lengths for estimators ported from TypeScript (OpenCode, Claude Code); ``summary_gate`` the
summary quality gate (questions from a span's facts, answered from its summary). The stages a ``custom``
strategy chains are listed in ``strategies.custom.STAGES``.
"""

from __future__ import annotations
