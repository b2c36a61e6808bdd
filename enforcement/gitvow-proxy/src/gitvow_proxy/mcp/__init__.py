"""MCP endpoints on the wire: what the proxy adds to the core's MCP reader.

The core classifies each ``tools/call`` (:mod:`gitvow.adapters.mcp`) and the pipeline judges
it like any request. This package holds what only the proxy can do: bind each MCP session to
the agent that opened it (:mod:`.sessions`), stream Server-Sent Events while scrubbing them
one event at a time (:mod:`.stream`), filter ``tools/list`` answers (:mod:`.tools`), and the
addons that apply them (:mod:`.addons`).
"""
