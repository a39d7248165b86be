"""An MCP server built on the Python `mcp` 2.3.0 SDK, for mcpc's interop tests.

It speaks both protocol eras, on stdio or (`http PORT`) Streamable HTTP; `sse PORT` serves the
old HTTP+SSE transport instead (handshake era only). Its `slow` tool reports
on stderr when it is cancelled, so a test can see that our cancel reached a server nobody here
wrote. It lists its tools one per page, so that the walk over every page is exercised.
"""

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import ListenHandler
from mcp_types import Completion, ListToolsResult, PromptReference, SubscriptionsListenRequestParams



class PagingServer(MCPServer):
    """Lists its tools one per page, as a server with many tools would, so that a client is
    seen following `nextCursor` to the last page. The SDK's own list handler returns a single
    page; this one slices the same list (the SDK's types carry the cursor on the wire)."""

    async def _handle_list_tools(self, ctx, params):
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + 1
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


server = PagingServer(name="python-peer", version="2.3.0")


class NotingListenHandler(ListenHandler):
    """The SDK's `subscriptions/listen` handler, saying on stderr when a listen starts and when
    the client's cancel ends it, so a test can see its cancel reach a listen."""

    async def __call__(self, ctx, params):
        note(f"listen started request={ctx.request_id}")
        try:
            return await super().__call__(ctx, params)
        except anyio.get_cancelled_exc_class():
            note(f"listen cancelled request={ctx.request_id}")
            raise


server._lowlevel_server.add_request_handler(
    "subscriptions/listen", SubscriptionsListenRequestParams, NotingListenHandler(server._subscriptions)
)


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@server.tool()
async def slow(ctx: Context, seconds: float = 10.0) -> str:
    """Sleeps, reporting progress ten times; says on stderr when it is cancelled."""
    note(f"slow started request={ctx.request_id}")
    try:
        for step in range(10):
            await ctx.report_progress(step + 1, 10)
            await anyio.sleep(seconds / 10)
    except anyio.get_cancelled_exc_class():
        note(f"slow cancelled request={ctx.request_id}")
        raise
    return f"slept {seconds}s"


@server.tool()
async def touch(ctx: Context, uri: str, legacy: bool = False) -> str:
    """Says the tools list changed and `uri` was updated: to listens (2026-07-28), or as the
    handshake era's notifications (`legacy`)."""
    if legacy:
        await ctx.request_context.session.send_tool_list_changed()
        await ctx.request_context.session.send_resource_updated(uri)
    else:
        await ctx.notify_tools_changed()
        await ctx.notify_resource_updated(uri)
    return "touched"


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.resource("peer://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello from python"


@server.prompt()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@server.resource("peer://items/{item}")
def item(item: str) -> str:
    """A templated text resource."""
    return f"item {item}"


@server.completion()
async def complete(ref, argument, context):
    """Completes the `greet` prompt's `name` from a fixed list."""
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        return Completion(values=[n for n in ("Ada", "Alan", "Grace") if n.startswith(argument.value)])
    return None


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        # Streamable HTTP at http://127.0.0.1:PORT/mcp, both eras (chosen per request).
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1:2] == ["sse"]:
        # The 2024-11-05 HTTP+SSE transport: GET /sse, POST /messages/ (handshake era only).
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
