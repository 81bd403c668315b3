"""Drives Cordon with the official Python MCP SDK's high-level `mcp.Client`, in a chosen era and transport.

Usage:
  python_eras.py MODE stdio CORDON_BIN ROOT STATE_DIR FILE MAX_TOKENS
  python_eras.py MODE http URL FILE MAX_TOKENS

Over http, a bearer token in the environment (CORDON_TEST_BEARER) is sent as `Authorization: Bearer …`
on every request, as a client holding an OAuth access token does.

MODE is the SDK's `mode=`: "legacy" (initialize handshake), "auto" (probe `server/discover`, fall back to
legacy) or a modern version such as "2026-07-28" (adopted without a probe). The client lists the tools,
then reads FILE with `max_tokens=MAX_TOKENS`, following `next_cursor` to the end. Prints one JSON object
with what it saw; the Rust e2e test (tests/e2e/clients.rs) checks it.
"""

import asyncio
import base64
import hashlib
import json
import sys

import os

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TIMEOUT = 120.0  # seconds per request: the suite must pass on a slow, busy machine


def payload(result) -> bytes:
    """A JSON-form page's payload, every byte: its text, or its bytes in base64
    (in the structured content, and as the one text block's JSON)."""
    shown = json.loads(result.content[0].text)
    assert shown == result.structured_content, "the text block is the structured content's JSON"
    if "base64" in shown:
        return base64.b64decode(shown["base64"])
    return shown["text"].encode()


async def main() -> None:
    mode, transport = sys.argv[1:3]
    if transport == "stdio":
        binary, root, state_dir, file, max_tokens = sys.argv[3:8]
        server = StdioServerParameters(command=binary, args=["serve", "--root", root, "--state-dir", state_dir])
    elif transport == "http":
        url, file, max_tokens = sys.argv[3:6]
        bearer = os.environ.get("CORDON_TEST_BEARER")
        server = url
        if bearer:
            headers = {"Authorization": f"Bearer {bearer}"}
            server = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    else:
        raise SystemExit(f"unknown transport {transport!r}")
    max_tokens = int(max_tokens)

    async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        args = {"path": file, "max_tokens": max_tokens, "format": "json"}
        data, pages, completes, cursors, is_errors = b"", 0, [], [], []
        while True:
            page = await client.call_tool("read", args)
            meta = page.structured_content
            data += payload(page)
            pages += 1
            completes.append(meta.get("complete"))
            is_errors.append(page.is_error)
            cursor = meta.get("next_cursor")
            cursors.append(cursor)
            if cursor is None or pages > 10_000:
                break
            args = {"cursor": cursor, "max_tokens": max_tokens}
        info = client.server_info
        print(json.dumps({
            "mode": mode,
            "transport": transport,
            "protocol_version": client.protocol_version,
            "server": info.name if info is not None else None,
            "has_tools_capability": client.server_capabilities.tools is not None,
            "tools": [t.name for t in listed.tools],
            "read_has_output_schema": tools["read"].output_schema is not None if "read" in tools else None,
            "pages": pages,
            "completes": completes,
            "is_errors": is_errors,
            "cursors_distinct": len({c for c in cursors if c is not None}) == pages - 1,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "reported_sha256": page.meta["cordon/page"].get("payload_sha256"),
        }))


asyncio.run(main())
