"""The agent gate: a pre-tool-use hook for Claude Code, Codex, Cursor, Gemini CLI and Copilot CLI.

It sees each tool call before it runs and answers allow, confirm or deny, in this order:
the regular-expression rules of gitvow 0.42's policy keys (:mod:`~gitvow_gate.rules`),
forge operations recognised in the call and judged by the proxy's table
(:mod:`~gitvow_gate.forge`), providers asked factual questions about edits (:mod:`~gitvow_gate.providers`),
then the optional classifier (:mod:`~gitvow_gate.classifier`) — see
:mod:`~gitvow_gate.decide`. Each agent's payload and answer format is an adapter of its own
(:mod:`gitvow_gate.agents`).

Nothing is imported here: the hook runs on every tool call and pays only for what it uses.
"""
