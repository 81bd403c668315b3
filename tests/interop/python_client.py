"""Drives `cordon serve` with the official Python MCP SDK (PyPI `mcp`).

Usage: python_client.py CORDON_BIN ROOT STATE_DIR FILE OUTSIDE
Prints one JSON object with what the client saw; the Rust e2e test checks it.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    binary, root, state_dir, file, outside = sys.argv[1:6]
    params = StdioServerParameters(command=binary, args=["serve", "--root", root, "--state-dir", state_dir])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            ok = await session.call_tool("read", {"path": file})
            denied = await session.call_tool("read", {"path": outside})
            print(json.dumps({
                "protocol_version": init.protocol_version,
                "server": init.server_info.name,
                "tools": [t.name for t in listed.tools],
                "read_has_output_schema": listed.tools[0].output_schema is not None,
                "text": "".join(c.text for c in ok.content if c.type == "text"),
                "structured": ok.structured_content,
                "is_error": ok.is_error,
                "denied_is_error": denied.is_error,
                "denied_structured": denied.structured_content,
                "denied_text": "".join(c.text for c in denied.content if c.type == "text"),
            }))


asyncio.run(main())
