"""Drives Cordon's resources with the official Python MCP SDK's `mcp.Client`, in a chosen era and transport.

Usage:
  python_resources.py MODE stdio ROOT -- CORDON_BIN serve ARGS...
  python_resources.py MODE http ROOT URL

MODE is "legacy" (initialize handshake) or "2026-07-28" (stateless). ROOT is the served root, which
holds (made by the Rust test, tests/e2e/resources.rs): text.txt, image.bin (binary), big.bin (the large
file), secret.pem (under the server's deny rule `*.pem`), and watched.txt. The client:

1. lists every resource, following nextCursor;
2. reads text.txt, image.bin, and big.bin to the end through `_meta["cordon/page"].next_uri`;
3. reads secret.pem (must be refused) and subscribes to it (must be refused, or left out of the ack);
4. subscribes to watched.txt and to ROOT (legacy: resources/subscribe; stateless: subscriptions/listen),
   then changes watched.txt from outside: a write, a rename over it, a delete, each timed to its
   `notifications/resources/updated`; changes secret.pem (nothing may name it); then writes watched.txt
   2,000 times in a burst and counts the notifications it brings;
5. stateless only: with CORDON_TEST_TOOL_ADD set (a JSON array: a command that installs a tool into
   the running server's tools directory), runs it and waits for `notifications/tools/list_changed`.

Prints one JSON object with what it saw; the Rust test checks it.
"""

import asyncio
import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged
from mcp.shared.exceptions import MCPError

TIMEOUT = 120.0  # seconds per request: the suite must pass on a slow, busy machine
QUIET = 1.5  # seconds without a notification that end a count


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


class Updates:
    """The URIs of `notifications/resources/updated` as they come, with when."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str, bool]] = []
        self.tools_changed: list[float] = []
        self.event = anyio.Event()

    def add(self, uri: str, resync: bool = False) -> None:
        self.seen.append((time.monotonic(), uri, resync))
        self.event.set()
        self.event = anyio.Event()

    async def first(self, uri: str, since: float, timeout: float = 10.0) -> float | None:
        """Seconds from `since` to the first update of `uri` after it, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, seen, _ in self.seen:
                if seen == uri and at >= since:
                    return at - since
            with anyio.move_on_after(deadline - time.monotonic()):
                await self.event.wait()
        return None

    async def quiet(self) -> None:
        """Waits until no update came for QUIET seconds."""
        while True:
            count = len(self.seen)
            await anyio.sleep(QUIET)
            if len(self.seen) == count:
                return


async def read_all(client: Client, uri: str) -> tuple[bytes, int, str | None, str | None]:
    """Every byte of a resource, following next_uri; the pages, the MIME type, the reported SHA-256."""
    data, pages, mime, reported = b"", 0, None, None
    while uri:
        result = await client.read_resource(uri, cache_mode="bypass")
        item = result.contents[0]
        mime = mime or item.mime_type
        data += item.text.encode() if hasattr(item, "text") else base64.b64decode(item.blob)
        pages += 1
        page = (result.meta or {}).get("cordon/page", {})
        reported = page.get("payload_sha256", reported)
        uri = page.get("next_uri")
    return data, pages, mime, reported


async def changes(updates: Updates, root: Path) -> dict:
    """Changes from outside, each timed to its notification."""
    watched, uri = root / "watched.txt", uri_of(root / "watched.txt")
    out = {}
    await anyio.sleep(0.3)
    t = time.monotonic()
    watched.write_text("written\n")
    out["write_s"] = await updates.first(uri, t)
    (root / "watched.tmp").write_text("renamed over\n")
    t = time.monotonic()
    os.replace(root / "watched.tmp", watched)
    out["rename_s"] = await updates.first(uri, t)
    t = time.monotonic()
    watched.unlink()
    out["delete_s"] = await updates.first(uri, t)
    watched.write_text("back\n")
    (root / "secret.pem").write_text("changed secret\n")
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "new.pem").write_text("another secret\n")
    await updates.quiet()
    before = len(updates.seen)
    t = time.monotonic()
    for i in range(2_000):
        with open(watched, "w") as f:
            f.write(f"burst {i}\n")
    out["burst_s"] = time.monotonic() - t
    await updates.quiet()
    burst = updates.seen[before:]
    out["burst_notifications"] = len(burst)
    out["burst_watched"] = sum(1 for _, u, _ in burst if u == uri)
    out["pem_named"] = [u for _, u, _ in updates.seen if u.endswith(".pem")]
    out["resyncs"] = sum(1 for _, _, r in updates.seen if r)
    return out


async def main() -> None:
    mode, transport, root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if transport == "stdio":
        command = sys.argv[sys.argv.index("--") + 1 :]
        server = StdioServerParameters(command=command[0], args=command[1:])
    else:
        server = sys.argv[4]
    updates = Updates()

    async def handler(message) -> None:
        if mode != "legacy":
            return  # the listen stream's events are taken from the subscription
        root_msg = getattr(message, "root", message)
        method = getattr(root_msg, "method", None)
        if method == "notifications/resources/updated":
            meta = (root_msg.params.meta or {}) if hasattr(root_msg.params, "meta") else {}
            updates.add(str(root_msg.params.uri), bool(dict(meta or {}).get("cordon/resync")))
        elif method == "notifications/tools/list_changed":
            updates.tools_changed.append(time.monotonic())

    report: dict = {"mode": mode, "transport": transport}
    async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT, message_handler=handler) as client:
        caps = client.server_capabilities
        report["resources_capability"] = caps.resources.model_dump() if caps.resources else None
        uris, cursor, pages = [], None, 0
        while True:
            listed = await client.list_resources(cursor=cursor, cache_mode="bypass")
            uris += [str(r.uri) for r in listed.resources]
            pages += 1
            cursor = listed.next_cursor
            if not cursor or pages > 10_000:
                break
        report["listed"] = uris
        report["list_pages"] = pages
        templates = await client.list_resource_templates()
        report["templates"] = [t.uri_template for t in templates.resource_templates]

        for name in ["text.txt", "image.bin", "big.bin"]:
            data, n, mime, reported = await read_all(client, uri_of(root / name))
            report[name] = {
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "pages": n,
                "mime": mime,
                "reported_sha256": reported,
            }
        try:
            await client.read_resource(uri_of(root / "secret.pem"), cache_mode="bypass")
            report["denied_read"] = "answered"
        except MCPError as e:
            report["denied_read"] = {"code": e.error.code, "message": e.error.message}

        watched, secret = uri_of(root / "watched.txt"), uri_of(root / "secret.pem")
        if mode == "legacy":
            try:
                await client.subscribe_resource(secret)
                report["denied_subscribe"] = "accepted"
            except MCPError as e:
                report["denied_subscribe"] = {"code": e.error.code, "message": e.error.message}
            await client.subscribe_resource(watched)
            await client.subscribe_resource(uri_of(root))
            report["changes"] = await changes(updates, root)
            await client.unsubscribe_resource(watched)
        else:
            wanted = [watched, uri_of(root), secret]
            async with client.listen(tools_list_changed=True, resource_subscriptions=wanted) as sub:
                report["honored"] = list(sub.honored.resource_subscriptions or [])

                async def pump() -> None:
                    async for event in sub:
                        if isinstance(event, ResourceUpdated):
                            updates.add(str(event.uri))
                        elif isinstance(event, ToolsListChanged):
                            updates.tools_changed.append(time.monotonic())

                async with anyio.create_task_group() as tg:
                    tg.start_soon(pump)
                    report["changes"] = await changes(updates, root)
                    add = os.environ.get("CORDON_TEST_TOOL_ADD")
                    if add:
                        t = time.monotonic()
                        subprocess.run(json.loads(add), check=True, capture_output=True)
                        deadline = time.monotonic() + 30
                        while not updates.tools_changed and time.monotonic() < deadline:
                            await anyio.sleep(0.05)
                        report["tools_changed_s"] = updates.tools_changed[0] - t if updates.tools_changed else None
                        listed = await client.list_tools()
                        report["tools_after"] = [t.name for t in listed.tools]
                    tg.cancel_scope.cancel()
    print(json.dumps(report))


asyncio.run(main())
