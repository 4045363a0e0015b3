"""The follower of a capture-fed candidate: ``vectorport sync --follow SERVING CANDIDATE``, seen
through the lease it holds beside its sync state (:mod:`vectorport.sync._lease`).

``status`` shows every follower between two members of the alias (running or how it stopped);
one that writes into the serving store, or into a member the alias writes itself, is a finding.
``switch`` of a capture-fed candidate first waits (at most :data:`CATCH_UP` seconds) for a
running follower to be caught up: every change committed before the switch began applied (a
read of its feed after that, which held all the feed had, applied; under steady writes the feed
is never empty, so "nothing left" would never come). Refused otherwise, nothing changed. Then, once the alias
dual-writes the candidate, it takes the target over (:func:`~vectorport.sync._lease.hand_over`):
the follower stops by itself at its next read of the feed, and no follower starts on that sync
state again, so no follower of the old serving store writes into the store the alias serves
after the switch. The follower is found at the sync state the switch's catch-up pass uses: the
default one of the two URLs, on this host. A sync that applies the serving store's capture into
the candidate without a lease found there (another ``--state``, another host) holds the
capture's lock: the gate finds it by that lock and refuses, nothing changed (that follower would
never see the take-over).
"""

from __future__ import annotations

import time
from pathlib import Path

from .._paths import default_state
from .._protocol import VectorStore
from ..engine._endpoints import Endpoint
from ..exceptions import ConfigurationError
from ..sync._capture import feed_of
from ..sync._lease import Follower, follower, hand_over
from ._gates import Gate
from ._model import AliasState, Feed, Member, Role

__all__ = ["CATCH_UP", "STOPPED", "followers", "stray", "sync_state", "wait_caught_up", "wait_stopped"]

CATCH_UP = 60.0
"""Seconds ``switch`` waits for a running follower to be caught up before it refuses."""
STOPPED = 60.0
"""Seconds ``switch`` waits for a follower to stop once the alias took its target over."""
_POLL = 0.1


def sync_state(source: Member, target: Member) -> Path:
    """The sync state of ``vectorport sync SOURCE TARGET`` (no ``--state``): where its follower's
    lease is, and what the switch's catch-up pass continues: named by the two URLs as given, as
    the command and :func:`vectorport.sync` name it."""
    return default_state(source.url, target.url)


def unleased(serving: VectorStore, candidate: VectorStore) -> str | None:
    """Why another sync applies ``serving``'s change capture into ``candidate`` (the capture's
    consumer, its lock held by another session), or ``None``: a follower whose lease the switch
    does not see (run with another ``--state``, or on another host)."""
    feed = feed_of(serving)
    if feed is None:
        return None
    try:
        into = Endpoint(candidate, owned=False, exists=True).label
        if feed.owner() != into:  # no sync follows it into the candidate (the catch-up scans)
            return None
        feed.claim(into)  # the lock, released at once by close(); raises while a sync holds it
    except ConfigurationError as exc:
        return str(exc)
    finally:
        feed.close()
    return None


def followers(state: AliasState) -> dict[str, Follower]:
    """The followers that ran between two members of the alias, by ``SOURCE -> TARGET``."""
    found: dict[str, Follower] = {}
    for source in state.members:
        for target in state.members:
            lease = follower(sync_state(source, target)) if source != target else None
            if lease is not None:
                found[f"{source.label} -> {target.label}"] = lease
    return found


def stray(state: AliasState) -> list[str]:
    """Findings: a running follower into a member the alias writes (the serving store, or a
    dual-written member), where two writers race."""
    out = []
    for source in state.members:
        for target in state.members:
            lease = follower(sync_state(source, target)) if source != target else None
            fed = target.role is not Role.SERVING and target.feed is Feed.CAPTURE
            if lease is not None and lease.running and not fed:
                out.append(
                    f"a follower (pid {lease.pid} on {lease.host}) writes {source.label}'s changes into "
                    f"{target.label}, which the alias writes itself ({target.role.value}): stop it"
                )
    return out


def wait_caught_up(
    state: AliasState,
    member: Member,
    wait: float | None = None,
    stores: tuple[VectorStore, VectorStore] | None = None,
) -> tuple[Gate, Follower | None]:
    """The ``follower`` gate of switching to a capture-fed ``member``: no follower runs, or the
    running one applied every change committed before this call began (waits up to ``wait``
    seconds, default :data:`CATCH_UP`); with ``stores`` (serving, member), no sync without a
    lease found here applies the capture into the member (:func:`unleased`). Changes nothing."""
    wait = CATCH_UP if wait is None else wait
    began = time.time()
    lease = follower(sync_state(state.serving, member))
    while lease is not None and lease.running and not lease.caught_up_since(began):
        if time.time() - began >= wait:
            return Gate(
                "follower",
                False,
                lease.behind,
                0,
                f"the follower ({lease.describe()}) has not caught up in {wait:.0f} s: run switch again "
                "once `vectorport alias status` shows it caught up",
            ), lease
        time.sleep(_POLL)
        lease = follower(sync_state(state.serving, member))
    if lease is None or not lease.running:
        other = unleased(*stores) if stores is not None else None
        if other is not None:
            why = (
                f"a sync whose lease this switch does not see (another --state, or another host) "
                f"applies the capture into {member.label}: {other}. Stop it (its follower would "
                "write into the store after the switch), then run switch again"
            )
            return Gate("follower", False, 1, 0, why), lease
        detail = "no follower running: the catch-up pass applies what the source captured"
        return Gate("follower", True, 0, 0, detail), lease
    return Gate("follower", True, 0, 0, f"the follower is caught up ({lease.describe()})"), lease


def wait_stopped(state: AliasState, member: Member, by: str, wait: float = STOPPED) -> Follower | None:
    """Take ``member`` over from its follower (it stops at its next read of the feed; no other
    starts on that state) and wait up to ``wait`` seconds for it to stop; the follower's last
    lease (``running`` still true: it did not stop in time)."""
    path = sync_state(state.serving, member)
    hand_over(path, by)
    deadline = time.monotonic() + wait
    lease = follower(path)
    while lease is not None and lease.running and time.monotonic() < deadline:
        time.sleep(_POLL)
        lease = follower(path)
    return lease
