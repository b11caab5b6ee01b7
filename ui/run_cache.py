"""`RunCache`: a bounded per-user server cache of live runs, so a Step does not rebuild both KV caches.

A Session holds only a plain `RunState`; resuming from it re-prefills the target's and the draft's
KV caches on every click. The cache keeps the live `engine.Run` (its KV caches warm) under the
session's random `key`. A handler *takes* the run out (so two concurrent clicks of one page never
share KV caches: the second finds nothing and rebuilds), uses it only if it matches the session's
plain state exactly, and puts it back afterwards. Entries go on Reset, when the page is left
(`leave`, by Gradio's session hash) and by LRU. Correctness never depends on the cache: a miss
rebuilds the run by re-running its steps from the seed (decoding/run/replay.py, ui/decode.rebuilt), so an
evicted run continues with exactly the tokens it would have emitted.

A Run click also `offer`s, at each step it draws, the p/q rows of that step (the app's runs leave a
step's theory to the view that shows it): Stop cancels the Run, whose live run is then not handed back
(Gradio does not close a cancelled generator), so Stop's handler `claim`s the offer to compute the
theory of the step the page was left on. Offers go with their run (Reset, page leave) and by LRU.

Owned by the app (one per Blocks) and passed to the handlers explicitly: no module-level state.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from decoding.models.pairs import same_pair as same_description
from decoding.run import engine


@dataclass(frozen=True)
class Offer:
    """Step `index` of a live run as a Run drew it: its kept rows and the verifier that judged it."""

    index: int
    rows: list  # (visit index, p row [V], q row [V]): engine.Run.kept_rows
    entry: Any  # the registry entry (its theory)


OFFERS_KEPT = 2  # a Run's offered steps kept per session: the last drawn and the one the page may still show


class RunCache:
    """At most `max_runs` live runs, least recently used evicted first; thread-safe."""

    def __init__(self, max_runs: int = 16, max_pages: int = 1024) -> None:
        if max_runs < 1:
            raise ValueError("a run cache holds at least one run")
        self.max_runs, self.max_pages = max_runs, max_pages
        self._runs: OrderedDict[str, engine.Run] = OrderedDict()
        self._pages: OrderedDict[str, str] = OrderedDict()  # Gradio session hash -> session key
        # session key -> the rows of the last OFFERS_KEPT steps a Run drew (Stop may land while the page still
        # shows the step before the one the Run offered last: the cancelled yield never reached the page)
        self._offers: OrderedDict[str, tuple[Offer, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._activity = 0  # takes and puts so far: whether any run was stepped between two readings

    def take(self, key: str, state: engine.RunState, pair=None) -> engine.Run | None:
        """The live run stored under `key`, removed, if it is exactly `state` on `pair` (default: the pair
        `state` names, so a handler that only reads the run's kept rows loads no model); else None."""
        with self._lock:
            live = self._runs.pop(key, None)
            self._activity += 1
        return live if live is not None and matches(live, state, pair) else None

    def put(self, key: str, run: engine.Run, page: str | None = None) -> None:
        """Keep `run` under `key` (most recent); `page` (a session hash) lets `leave` find it."""
        with self._lock:
            self._activity += 1
            self._runs[key] = run
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
            if page:
                self._pages[page] = key
                self._pages.move_to_end(page)
                while len(self._pages) > self.max_pages:
                    self._pages.popitem(last=False)

    def offer(self, key: str, offer: Offer) -> None:
        """The step a Run just drew (its rows, to compute its theory later without the live run); the one before
        it is kept too (OFFERS_KEPT)."""
        with self._lock:
            earlier = tuple(o for o in self._offers.get(key, ()) if o.index != offer.index)
            self._offers[key] = (*earlier, offer)[-OFFERS_KEPT:]
            self._offers.move_to_end(key)
            while len(self._offers) > self.max_runs:
                self._offers.popitem(last=False)

    def claim(self, key: str, index: int) -> Offer | None:
        """The offer under `key` for step `index`, if there is one; the key's offers are removed either way."""
        with self._lock:
            offers = self._offers.pop(key, ())
        return next((o for o in offers if o.index == index), None)

    def evict(self, key: str | None) -> None:
        with self._lock:
            self._runs.pop(key or "", None)
            self._offers.pop(key or "", None)

    def leave(self, page: str | None) -> None:
        """The page with this session hash was closed: drop its run."""
        with self._lock:
            key = self._pages.pop(page or "", None)
            self._runs.pop(key or "", None)
            self._offers.pop(key or "", None)

    def clear(self) -> None:
        with self._lock:
            self._runs.clear()
            self._pages.clear()
            self._offers.clear()

    @property
    def activity(self) -> int:
        """How many runs were taken or kept so far (a Step takes its run and keeps it again)."""
        with self._lock:
            return self._activity

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._runs

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)


def matches(live: engine.Run, state: engine.RunState, pair=None) -> bool:
    """Whether a cached run is the session's run: same models, config, tokens, steps and generator."""
    have = live.state
    described = state.pair if pair is None else pair.describe()
    same_pair = live.pair is pair or same_description(live.pair.describe(), described)  # the toy's is not cached
    return (same_pair and have.config == state.config and have.prompt_ids == state.prompt_ids
            and have.generated_ids == state.generated_ids and len(have.steps) == len(state.steps)
            and have.rng_state == state.rng_state and have.stop_reason == state.stop_reason)
