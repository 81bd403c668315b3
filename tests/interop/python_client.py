"""Drives `cordon serve` with the official Python MCP SDK (PyPI `mcp`).

Usage: python_client.py CORDON_BIN ROOT STATE_DIR FILE OUTSIDE BIG_FILE [IMAGE BINARY]
Prints one JSON object with what the client saw; the Rust e2e test checks it.
"""

import asyncio
import base64
import hashlib
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def payload(structured: dict) -> bytes:
    """A JSON-form page's payload, every byte: its text, or its bytes in base64."""
    if "base64" in structured:
        return base64.b64decode(structured["base64"])
    return structured["text"].encode()


async def main() -> None:
    binary, root, state_dir, file, outside, big = sys.argv[1:7]
    image, blob = (sys.argv[7:9] + [None, None])[:2]
    params = StdioServerParameters(command=binary, args=["serve", "--root", root, "--state-dir", state_dir])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            ok = await session.call_tool("read", {"path": file})
            exact = await session.call_tool("read", {"path": file, "format": "json"})
            denied = await session.call_tool("read", {"path": outside})
            # Page through a larger file with cursors, as the README shows.
            args = {"path": big, "max_tokens": 500, "format": "json"}
            data, pages = b"", 0
            while True:
                page = await session.call_tool("read", args)
                meta, checks = page.structured_content, page.meta["cordon/page"]
                data += payload(meta)
                pages += 1
                if meta["next_cursor"] is None:
                    break
                args = {"cursor": meta["next_cursor"], "max_tokens": 500}
            seen_media = await media(session, image, blob) if image and blob else {}
            print(json.dumps({
                **seen_media,
                "protocol_version": init.protocol_version,
                "server": init.server_info.name,
                "tools": [t.name for t in listed.tools],
                "read_has_output_schema": listed.tools[0].output_schema is not None,
                "text": "".join(c.text for c in ok.content if c.type == "text"),
                "text_structured": ok.structured_content,
                "exact_text": exact.structured_content["text"],
                "exact_mirrored": [c.type for c in exact.content] == ["text"]
                and json.loads(exact.content[0].text) == exact.structured_content,
                "structured": exact.structured_content,
                "is_error": ok.is_error,
                "denied_is_error": denied.is_error,
                "denied_structured": denied.structured_content,
                "denied_meta": denied.meta,
                "denied_text": "".join(c.text for c in denied.content if c.type == "text"),
                "paged_pages": pages,
                "paged_sha256": hashlib.sha256(data).hexdigest(),
                "paged_reported_sha256": checks["payload_sha256"],
            }))


async def media(session: ClientSession, image: str, blob: str) -> dict:
    """An image in the text form, and a binary file paged in the JSON form and
    put back together from its blobs, each chunk checked against its hash."""
    shown = await session.call_tool("read", {"path": image})
    described = await session.call_tool("read", {"path": blob})
    args = {"path": blob, "format": "json", "max_tokens": 2000}
    data, chunks_ok = b"", True
    while True:
        page = await session.call_tool("read", args)
        checks = page.meta["cordon/page"]
        start = len(data)
        data += payload(page.structured_content)
        for chunk in checks["chunks"]:
            piece = data[start : start + chunk["bytes"]]
            chunks_ok &= hashlib.sha256(piece).hexdigest() == chunk["sha256"]
            start += chunk["bytes"]
        if page.structured_content["next_cursor"] is None:
            break
        args = {"cursor": page.structured_content["next_cursor"], "max_tokens": 2000}
    return {
        "image_blocks": [c.type for c in shown.content],
        "image_mime": shown.content[0].mime_type if shown.content[0].type == "image" else None,
        "image_sha256": hashlib.sha256(base64.b64decode(shown.content[0].data)).hexdigest(),
        "binary_text": "".join(c.text for c in described.content if c.type == "text"),
        "binary_sha256": hashlib.sha256(data).hexdigest(),
        "binary_reported_sha256": checks["payload_sha256"],
        "binary_chunks_ok": chunks_ok,
    }


asyncio.run(main())
