"""MCP tool servers (the official `mcp` SDK), with no UI.

`settings`: the `[mcp.servers.NAME]` config; `connection`: one server kept
connected; `hub`: every server and the tools, prompts and approvals each chat
gets from them. Importing this package is cheap: the SDK itself is imported
in a thread when the first server starts (`connection.load_sdk`).
"""
