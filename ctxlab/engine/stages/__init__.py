"""Reusable compaction stages (truncate, offload, prune, drop turns, summarise ...).

``markers`` holds byte-exact text routines; ``split`` the cut-point searches;
``agentscope`` the Msg adapter shared by QwenPaw and CoPaw; ``compose`` the generic
stages a ``custom`` strategy chains (see ``STAGES`` there).
"""

from __future__ import annotations
