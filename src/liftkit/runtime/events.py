"""Task order (seed 003 §7.1.4, §7.3.3, §7.4): the event table of pending tasks, the events a task
waits for across the compute queues and the transfer queue, the queue a task goes to, the
waits of the host (waitForEvent, waitForVariable, waitAll) and the sweep that drops finished
tasks. A mixin of ``Runtime`` (runtime/core.py), whose tables these methods read and change."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from .tables import ArrayVar, EventRow


class TaskOrder:
    """``Runtime``'s events, queues and waits (a mixin: the runtime's tables, device and
    bookkeeping are its)."""

    lock: Any        # set by Runtime.__init__
    device: Any
    buffers: dict
    events: dict
    nqueues: int
    _rr: int
    _latest: list
    _unmarked: list
    _waited: list
    _to_wait: Optional[tuple]
    _retire_at: int
    _stats: Any
    _next: Any
    _var: Any
    _to_host: Any

    def wait_event(self, eid: int) -> None:
        """waitForEvent (§7.1.4)."""
        with self.lock:
            row = self.events.get(eid)
            if row is not None:
                self.device.wait(self._event_of(row))
                self._retire()

    def event_done(self, eid: int) -> bool:
        with self.lock:
            row = self.events.get(eid)
            return row is None or self.device.done(self._event_of(row))

    def wait_for(self, v: ArrayVar) -> None:
        """waitForVariable without a transfer: every task that may write ``v`` has finished."""
        with self.lock:
            buf = self.buffers[self._var(v).buffer]
            for eid in list(buf.writers):
                self.wait_event(eid)

    def wait_all(self, sync: bool = True) -> None:
        """waitAll (§7.1.4): finish every task; with ``sync`` bring every host copy up to date."""
        with self.lock:
            self.device.finish()
            self._retire(finished=True)
            if sync:
                for buf in list(self.buffers.values()):
                    if buf.registered:
                        self._to_host(buf)

    def _retire(self, finished: bool = False) -> None:
        """Drop finished tasks from the event table (``finished``: the device finished every
        task, nothing is asked). Queues are in order: on each queue the tasks finish in the
        order they were enqueued, so the first one still running there ends the queries for
        that queue (a query is a driver call; tasks without an event share one made now)."""
        done, busy = [], set()
        if finished:
            done = list(self.events)
            for pend in self._unmarked:
                pend.clear()
        else:
            newest: dict[int, EventRow] = {}
            for row in self.events.values():
                newest[row.queue] = row
            idle = {q for q, row in newest.items()  # a queue whose newest task is done: all
                    if row.task.endswith("@cpu") or self.device.done(self._event_of(row))}
            last, last_done = None, False  # tasks sharing an event: one query for them all
            for eid, row in self.events.items():  # insertion order: oldest first
                q = row.queue
                if q in idle or row.task.endswith("@cpu"):  # (a CPU task was waited for)
                    done.append(eid)
                    continue
                if q in busy:
                    continue
                ev = self._event_of(row)
                if ev is not last:
                    last, last_done = ev, self.device.done(ev)
                if last_done:
                    done.append(eid)
                else:
                    busy.add(q)
        # the next sweep when 64 more tasks are pending (a long chain of running kernels
        # would otherwise be swept, a driver query and a pass over the table, at each launch)
        self._retire_at = len(self.events) - len(done) + 64
        recycle = getattr(self.device, "recycle", None)
        back: set = set()  # events shared by tasks (``_event_of``) go back once
        for eid in done:
            row = self.events.pop(eid)
            ev = row.event
            if recycle is not None and ev is not None and id(ev) not in back and \
                    not row.task.endswith("@cpu"):
                back.add(id(ev))
                recycle(ev)
        if done:
            gone = set(done)
            for buf in self.buffers.values():
                if buf.readers:
                    buf.readers = [e for e in buf.readers if e not in gone]
                if buf.writers:
                    buf.writers = [e for e in buf.writers if e not in gone]

    # ------------------------------------------------------------------ queues and events
    def _record(self, event: Any, task: str, reads: tuple, writes: tuple, keep: list,
                queue: int = -1) -> int:
        eid = self._next()
        self.events[eid] = EventRow(eid, event, task, reads, writes, list(keep), queue)
        return eid

    def _events(self, eids: Iterable[int], queue: Optional[int] = None) -> list:
        """The backend events to wait for so that the pending tasks ``eids`` are done, none of
        compute queue ``queue`` (an in-order queue follows its own tasks without being told):
        the newest of them on each other queue, as queues (the transfer queue too) run their
        tasks in order and ids grow in enqueue order. With ``queue`` the events are waits the
        caller enqueues there: none that queue was made to wait for already (or a later task
        of the same queue)."""
        newest: dict[int, int] = {}
        events = self.events
        for e in eids:
            row = events.get(e)
            if row is None or (queue is not None and row.queue == queue):
                continue
            if e > newest.get(row.queue, -1):
                newest[row.queue] = e
        if not newest:
            return []
        if queue is None:
            return [self._event_of(events[e]) for e in newest.values()]
        waited, out, new = self._waited[queue], [], []
        for q, e in newest.items():
            if e > waited.get(q, 0):
                new.append((q, e))
                out.append(self._event_of(events[e]))
        self._to_wait = (queue, new) if new else None
        return out

    def _waits_made(self) -> None:
        """The task ``_place`` placed was enqueued: its queue has waited for those tasks."""
        if self._to_wait is not None:
            queue, new = self._to_wait
            waited = self._waited[queue]
            for q, e in new:
                if e > waited.get(q, 0):
                    waited[q] = e
            self._to_wait = None

    def _event_of(self, row: EventRow) -> Any:
        """The backend event of a task: one launched without (``_lazy``) gets it now, an event
        recorded on its queue, which is done once it and every task before it there are; the
        queue's other tasks still without one share it (they all come before it)."""
        ev = row.event
        if ev is None:
            ev = self.device.mark(row.queue)
            events = self.events
            pend = self._unmarked[row.queue]
            for e in pend:
                r = events.get(e)
                if r is not None:
                    r.event = ev
            pend.clear()
        return ev

    def latest_events(self, eids: Iterable[int]) -> list:
        """``_events`` for callers outside the runtime (the events another library's stream
        waits for: one per queue)."""
        with self.lock:
            return self._events(eids)

    def _place(self, deps: list[int]) -> tuple[int, list]:
        """A compute queue for a task depending on ``deps``: the queue of its latest pending
        compute dependency (no event needed), else the next queue in turn; and the events it
        must wait for on the other queues."""
        latest, queue = -1, -1
        events = self.events
        for e in deps:
            row = events.get(e)
            if row is not None and row.queue >= 0 and e > latest:
                latest, queue = e, row.queue
        if queue < 0:
            queue = self._rr
            self._rr = (self._rr + 1) % self.nqueues
        self._to_wait = None
        wait = self._events(deps, queue) if deps else []
        if wait:
            self._stats["cross_queue_waits"] += len(wait)
        return queue, wait

    def _count_overlap(self, deps: list[int]) -> None:
        """A transfer enqueued while kernels it does not depend on are still running overlaps
        them (on one in-order queue it would have waited for them). A task launched without
        an event counts as running (asking would record one: a driver call for a statistic)."""
        events = self.events
        for eid in self._latest:  # in order: if a queue's newest task is done, all are
            row = events.get(eid)  # (None: retired, so done)
            if row is not None and eid not in deps and (
                    row.event is None or not self.device.done(row.event)):
                self._stats["overlapped_transfers"] += 1
                return
