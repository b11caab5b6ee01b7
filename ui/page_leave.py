"""What a page leave releases on the server: the page's live run, Gradio's records of pages whose state has
expired, and the heap those freed.

Gradio calls the unload handler when a page's heartbeat stream ends (a tab closed, a gradio_client closed):
1. The page's live run (its KV caches) leaves the run cache (`RunCache.leave`).
2. Gradio keeps a left page's gr.State for an hour so that a page that reconnects finds it
   (STATE_TTL_WHEN_CLOSED in gradio/state_holder.py), then deletes that state but not the page's record
   in its state holder: a `SessionState` with its own copy of the page's config and the last value of
   every output the page was sent (the tree figure's JSON, the tables, the story), only dropped once
   10,000 pages have come. A server running for days piled these up (~0.2 MB a page measured by
   `python -m tests.soak`). `forget_expired` removes the records of closed pages whose state Gradio has
   already deleted, so nothing a reconnecting page could find is lost.
3. `heap.release()`: the pages the run and the records held go back to the system (ui/heap.py says why
   glibc would otherwise keep them).

The handler is a coroutine: Gradio reads and writes its state holder from its event loop, and running
the sweep there means no Gradio code is ever between its check and its use of a record we remove.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import gradio as gr

from ui import heap
from ui.run_cache import RunCache


def leave_handler(runs: RunCache, demo: gr.Blocks) -> Callable[[gr.Request], Awaitable[None]]:
    """The Blocks' unload handler (Gradio hands it only a gr.Request, found by its type hint)."""
    async def leave(request: gr.Request) -> None:
        forget_expired(getattr(demo, "state_holder", None))  # in the event loop, as Gradio's own expiry runs
        await anyio.to_thread.run_sync(_release, runs, request.session_hash)
    return leave


def _release(runs: RunCache, page: str | None) -> None:
    runs.leave(page)
    heap.release()


def forget_expired(holder: Any) -> int:
    """Remove from Gradio's state holder the records of closed pages whose kept state has expired; how many.

    Does nothing (0) when the holder does not look like the one this was written against (its
    `session_data` of `SessionState`s with `is_closed` and `_state_ttl`): a record is never removed on a
    guess."""
    records = getattr(holder, "session_data", None)
    if records is None:
        return 0
    gone = [page for page, record in list(records.items()) if _expired(record)]
    for page in gone:
        records.pop(page, None)
        getattr(holder, "time_last_used", {}).pop(page, None)
    return len(gone)


def _expired(record: Any) -> bool:
    """Closed, and Gradio has deleted every state it kept for a reconnect (each one written has a time to
    live); what may remain are never-written defaults that a reconnecting page would rebuild anyway."""
    known = all(hasattr(record, name) for name in ("is_closed", "_state_ttl", "state_data"))
    if not known or record.is_closed is not True:
        return False
    return not any(key in record._state_ttl for key in record.state_data)
