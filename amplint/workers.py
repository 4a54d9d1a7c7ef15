"""Worker processes that live for a whole run, each with a memory its jobs share.

A pool per batch (the standard library's executors) forgets what its workers
did: in project mode a file parsed in a worker for its summary had to be parsed
again for its entry findings once the walk ended, and every batch forked a new
pool. Here the workers stay up from the first batch to the end of the run, a
job may be pinned to the worker that holds what it needs, and each worker keeps
a `Memory` that stateful jobs read and write (the loader keeps parse
trees there, as it keeps its own).

One job per worker is in flight at a time: the worker is always waiting in
`recv` when it is sent one, so neither side can block on a full pipe. A job
may be started ahead of the batch that will ask for it (`start`), on a worker
that is idle while this process works on something else: `run` then takes its
result instead of sending the item again. A job
whose worker raised, or died, comes back as missing and the caller runs it
itself; so does every job pinned to a dead worker. Workers ignore SIGINT: on
Ctrl-C the parent ends them and re-raises `KeyboardInterrupt`.
"""
from __future__ import annotations

import gc
import os
import signal
import weakref
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

Memory = Dict[str, Any]  # what a worker's stateful jobs keep, by their own keys
AHEAD = -1  # `_Worker.job` of a job started ahead of its batch (`Workers.start`) and not claimed by one yet


@dataclass
class _Worker:
    process: Any
    conn: Connection
    job: Optional[int] = None  # index of the item in flight (AHEAD: a job started ahead)
    ahead: Optional[Tuple[Callable[..., Any], Any]] = None  # that job's (func, item)


# Set in the parent just before a fork, read by the child it makes (`fork` copies it; other start methods
# leave it empty): the parent's pid, and the pool's pipe ends the child must not keep.
_FORKED: Dict[str, Any] = {}


def _serve(conn: Connection) -> None:
    """A worker's loop: (func, item, stateful) in, (ok, result) out, until None or the parent is gone.

    The pipe ends a fork copied from the parent (this worker's other end, its siblings') are closed first:
    a worker holding them kept its siblings' pipes open, so that no worker read EOF when the parent was
    killed, and all of them lived on (PPID 1) for ever. Then the worker ties its life to its parent's.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's `terminate`; not the CLI's "SIGTERM is Ctrl-C"
    for other in _FORKED.pop("pipes", ()):
        other.close()
    die_with_parent(_FORKED.pop("pid", None) or os.getppid())
    from amplint import progress

    progress.detach()
    memory: Memory = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        func, item, stateful = message
        try:
            reply = (True, func(item, memory) if stateful else func(item))
            conn.send(reply)  # pickled before a byte is written: an unpicklable result raises here
        except Exception:
            try:
                conn.send((False, None))
            except (OSError, ValueError):
                return


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_SECONDS = 0.5  # how often a worker without PR_SET_PDEATHSIG looks for its parent


def die_with_parent(parent: int) -> None:
    """End this worker as soon as `parent` (the process that started it) is gone, however it ended.

    EOF on the pipe covers a parent that exits, but not one killed while a job runs, nor a pipe end some
    other process still holds. On Linux the kernel sends SIGKILL when the parent dies (PR_SET_PDEATHSIG,
    through ctypes); where that is unavailable, or the parent is not our direct parent (a forkserver
    started us), a daemon thread polls for it. A parent that died before this ran ends us at once.
    """
    if os.getppid() == parent and _kill_on_parent_death():
        if os.getppid() != parent:  # it died before the kernel was told
            os._exit(1)
        return
    if os.name == "nt":  # `os.kill(pid, 0)` would end the parent there; its spawned workers read EOF instead
        return
    import threading
    import time

    def watch() -> None:
        while _alive(parent):
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="amplint-parent-watch", daemon=True).start()


def _kill_on_parent_death() -> bool:
    """Ask Linux for SIGKILL on the parent's death; False where that cannot be asked."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, under another user (a reused pid): treat as alive
        return True
    return True


class Workers:
    """`count` worker processes, started at once and known by their pids.

    `close` (or leaving a `with`) ends them; so does losing the last reference, or the interpreter's exit.
    """

    def __init__(self, count: int, context: Any, preload: Sequence[str] = ()) -> None:
        import importlib

        if context.get_start_method() == "fork":
            for name in preload:  # the children start warm
                importlib.import_module(name)
        elif context.get_start_method() == "forkserver":
            context.set_forkserver_preload(list(preload))
        self._workers: Dict[int, _Worker] = {}
        self._ahead_done: List[Tuple[Callable[..., Any], Any, bool, Any]] = []  # (func, item, ok, result)
        self._finalizer = weakref.finalize(self, _end, self._workers, True)
        self._start(count, context)

    def _start(self, count: int, context: Any) -> None:
        from amplint.interrupts import deferred_interrupt

        frozen = context.get_start_method() == "fork"
        if frozen:  # forked children share the parent's pages until their collector writes to them
            gc.freeze()
        try:
            with deferred_interrupt():  # no child may get Ctrl-C before it ignores it
                for _ in range(count):
                    parent, child = context.Pipe()
                    if frozen:  # a fork copies every pipe end this process holds: the worker closes all but its own
                        _FORKED.update(pid=os.getpid(), pipes=[parent] + [w.conn for w in self._workers.values()])
                    process = context.Process(target=_serve, args=(child,), daemon=True)
                    try:
                        process.start()
                    finally:
                        _FORKED.clear()
                    child.close()  # only the worker holds its end: its death reads as EOF here
                    self._workers[process.pid] = _Worker(process, parent)
        except BaseException:
            self.close()
            raise
        finally:
            if frozen:
                gc.unfreeze()

    @property
    def alive(self) -> List[int]:
        """The pids of the workers still up."""
        return sorted(self._workers)

    def run(
        self,
        func: Callable[..., Any],
        items: Sequence[Any],
        *,
        weights: Optional[Sequence[int]] = None,
        pins: Optional[Sequence[Optional[int]]] = None,
        stateful: bool = False,
        done: Optional[Callable[[int, Any], None]] = None,
        steal: bool = False,
    ) -> Dict[int, Any]:
        """Run `func` on each item in the workers: largest weight first, a pinned item only on its worker (a pid).

        Returns the results by item index. `stateful` calls `func(item,
        memory)` with the worker's memory. Items that did not come back (the
        worker raised or died, or the pin names a worker that is gone) are not
        in the result. `done(index, result)` is called as each result arrives.
        `steal`: a pin is a preference. A worker with nothing of its own left takes
        the smallest item pinned to the busiest other, and an item pinned to a
        worker that is gone goes to any.
        """
        results: Dict[int, Any] = {}
        shared: Deque[int] = deque()
        pinned: Dict[int, Deque[int]] = {pid: deque() for pid in self._workers}
        claimed = self._claim(func, items, results, done)
        for index in sorted(range(len(items)), key=lambda index: -(weights[index] if weights else 0)):
            if index in claimed:
                continue
            pin = pins[index] if pins is not None else None
            if pin in pinned:
                pinned[pin].append(index)
            elif pin is None or steal:
                shared.append(index)
        try:
            self._dispatch(func, items, stateful, shared, pinned, results, done, steal)
        except BaseException:
            self.close(now=True)
            raise
        return results

    def _dispatch(
        self, func: Callable[..., Any], items: Sequence[Any], stateful: bool, shared: Deque[int],
        pinned: Dict[int, Deque[int]], results: Dict[int, Any], done: Optional[Callable[[int, Any], None]],
        steal: bool = False,
    ) -> None:
        while True:
            self._fill(func, items, stateful, shared, pinned, steal)
            busy = {worker.conn: pid for pid, worker in self._workers.items() if worker.job is not None}
            ours = any(self._workers[pid].job != AHEAD for pid in busy.values())
            if not busy or not (ours or shared or any(pinned.values())):
                return  # what is left cannot be placed (its pin is gone), or only others' jobs run
            for conn in wait(list(busy)):
                pid = busy[conn]
                arrived = self._receive(pid)
                if arrived is None:  # the worker died: what was pinned to it runs in the caller
                    pinned.pop(pid, None)
                    continue
                index, ok, result = arrived
                if ok and index != AHEAD:
                    results[index] = result
                    if done is not None:
                        done(index, result)

    def _receive(self, pid: int) -> Optional[Tuple[int, bool, Any]]:
        """The reply of `pid`'s job in flight: (its index, ok, result); None when the worker died.

        A job started ahead comes back as AHEAD and is kept for the batch that asks for it.
        """
        worker = self._workers[pid]
        try:
            ok, result = worker.conn.recv()
        except (EOFError, OSError):
            self._drop(pid)
            return None
        index, worker.job = worker.job, None
        assert index is not None
        if index == AHEAD:
            assert worker.ahead is not None
            self._ahead_done.append((*worker.ahead, ok, result))
        worker.ahead = None
        return index, ok, result

    # --- jobs started ahead of their batch ----------------------------------------------------------------
    def start(self, func: Callable[..., Any], item: Any, *, stateful: bool = False,
              pin: Optional[int] = None) -> bool:
        """Send `func(item)` to a worker idle now (`pin` if it is), ahead of the `run` that will ask for it.

        False when every worker is busy, or the item cannot be sent: the batch
        sends it as usual then. Results that came back meanwhile are collected
        first, without waiting, so a worker that finished one is idle again.
        """
        self._collect(wait_all=False)
        idle = [pid for pid, worker in self._workers.items() if worker.job is None]
        if not idle:
            return False
        pid = pin if pin in idle else idle[0]
        self._send(pid, (func, item, stateful), AHEAD)
        worker = self._workers.get(pid)
        if worker is None or worker.job != AHEAD:
            return False
        worker.ahead = (func, item)
        return True

    def collect(self) -> None:
        """Wait for the jobs started ahead that are still out; their results wait for the batch that asks."""
        self._collect(wait_all=True)

    def settle(self) -> None:
        """`collect`, then forget every result no batch claimed."""
        self.collect()
        self._ahead_done.clear()

    def _collect(self, wait_all: bool) -> None:
        """Receive the replies of jobs started ahead: those already in (`wait_all` False), or all of them."""
        while True:
            out = {worker.conn: pid for pid, worker in self._workers.items() if worker.job == AHEAD}
            if not out:
                return
            for conn in wait(list(out), timeout=None if wait_all else 0):
                self._receive(out[conn])
            if not wait_all:
                return

    def _claim(self, func: Callable[..., Any], items: Sequence[Any], results: Dict[int, Any],
               done: Optional[Callable[[int, Any], None]]) -> Set[int]:
        """The items of a batch that were started ahead: those back get their result now (a failed one none,
        so the caller runs it), and a worker still on one now runs it for the batch."""
        claimed: Set[int] = set()
        for index, item in enumerate(items):
            back = next((n for n, (f, i, _, _) in enumerate(self._ahead_done) if f is func and i == item), None)
            if back is not None:
                _, _, ok, result = self._ahead_done.pop(back)
                claimed.add(index)
                if ok:
                    results[index] = result
                    if done is not None:
                        done(index, result)
                continue
            for worker in self._workers.values():
                if worker.job == AHEAD and worker.ahead is not None and worker.ahead[0] is func \
                        and worker.ahead[1] == item:
                    worker.job, worker.ahead = index, None
                    claimed.add(index)
                    break
        return claimed

    def _fill(
        self, func: Callable[..., Any], items: Sequence[Any], stateful: bool, shared: Deque[int],
        pinned: Dict[int, Deque[int]], steal: bool = False,
    ) -> None:
        """Give each idle worker its next item: one pinned to it first, else the largest one left (`run`'s `steal`:
        else the smallest one pinned to the worker with the most left)."""
        for pid in list(self._workers):
            while pid in self._workers and self._workers[pid].job is None:
                queue = pinned.get(pid) or shared
                if queue:
                    index = queue.popleft()
                elif steal and any(pinned.values()):
                    index = max(pinned.values(), key=len).pop()
                else:
                    break
                self._send(pid, (func, items[index], stateful), index)

    def _send(self, pid: int, message: Tuple[Any, Any, bool], index: int) -> None:
        """Hand one item to a worker; one that cannot be sent is left to the caller."""
        worker = self._workers[pid]
        try:
            worker.conn.send(message)  # pickled first: an item that cannot be pickled raises before a byte goes
        except Exception:
            if not worker.process.is_alive():
                self._drop(pid)
            return
        worker.job = index

    def _drop(self, pid: int) -> None:
        worker = self._workers.pop(pid)
        worker.conn.close()
        worker.process.join(timeout=5)

    def close(self, now: bool = False) -> None:
        """End every worker: ask them to stop, or with `now` (an error, Ctrl-C) terminate them.

        A job started ahead is waited for first: its worker could not send a large reply no one reads.
        """
        if not now:
            self.settle()
        self._finalizer.detach()
        _end(self._workers, now)

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(now=exc[0] is not None)


def _end(workers: Dict[int, _Worker], now: bool) -> None:
    """Stop the workers and forget them (a `weakref.finalize` callback: it must not hold the pool)."""
    ending = list(workers.values())
    workers.clear()
    for worker in ending:
        try:
            if now:
                worker.process.terminate()
            else:
                worker.conn.send(None)
        except (OSError, ValueError):
            pass
    for worker in ending:
        worker.process.join(timeout=5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(timeout=5)
        worker.conn.close()
