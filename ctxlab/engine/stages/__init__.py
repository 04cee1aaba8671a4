"""Reusable compaction stages (truncate, offload, prune, drop turns, summarise ...).

``markers`` holds byte-exact text routines; ``split`` the cut-point searches;
``agentscope`` the Msg adapter shared by QwenPaw and CoPaw; ``prune`` OpenCode's
tool-output prune walk (OpenCode and the custom strategy). The stages a ``custom``
strategy chains are listed in ``strategies.custom.STAGES``.
"""

from __future__ import annotations
