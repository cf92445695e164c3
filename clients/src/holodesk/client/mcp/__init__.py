"""`holodesk mcp`: this desktop as a Model Context Protocol server.

Any MCP host (Claude Desktop, Claude Code, Cursor, an agent of one's own) gets
tools to look at the screen, act on it in screen pixels and hand a whole task to
a holodesk daemon. Every input goes through the same safety guard as
`holodesk run` (holodesk.client.safety): the MCP host is one more party that can
only ask.

Modules, one job each: desktop (the backend, the guard, screen-pixel actions),
opening (the desktop opened when it can be: the server starts without one),
grounding (Locate through the daemon), tasks (a whole session and its report),
tools (the MCP tool surface), transport (stdio and streamable HTTP), address
(the HTTP address, checked), install (the hosts' configuration files), command
(the CLI's parser, loaded at every `holodesk` start, so it imports no MCP SDK) and
serve (what the command runs).
"""
