"""Launch plans: a kernel launched again and again on the same arrays (a loop in a GPU section,
fft's stages) reuses what the runtime worked out at its first launch — the arrays' rows and
buffers, the built kernel, the argument list with its scalar slots — while the runtime's tables
keep their shape (``Runtime._epoch``, moved by every variable made or released and every
buffer allocated, freed, merged, evicted or copied on write). Only the transfers a buffer needs,
the dependencies, the scalars and the task's rows are worked out per launch; every guarantee of
a plain ``launch`` holds (a plan that cannot take the short path takes the plain one).
``Runtime.launch`` makes plans itself for launches it sees repeated (the same kernel, arrays,
reads and writes: a chain of dependent kernels, a loop in a program using the runtime)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .tables import ArrayVar, Kernel, LaunchPlan, Whole

_SCALARS = (np.int64, np.int32, np.float64, np.float32)


class PlannedLaunches:
    """``Runtime``'s planned launches (a mixin: the runtime's tables and ``launch`` are its)."""

    lock: Any        # set by Runtime.__init__
    vars: dict
    buffers: dict
    device: Any
    dialect: str
    _epoch: int
    _stats: Any
    _seen: dict
    _memo: Any
    _launch: Any
    _lazy: bool

    def _repeated(self, kernel: Kernel, args: Sequence[Any], reads: list, writes: list,
                  overwrites: list) -> Optional[LaunchPlan]:
        """The plan of a launch made before with the same kernel, the same arrays at the same
        places among its arguments and the same reads, writes and overwrites (made when it is
        seen the second time), else None (the first time). At most 256 are remembered."""
        k: list = [id(kernel)]
        for a in args:
            t = type(a)
            k.append(a.id if t is ArrayVar else -a.var.id if t is Whole else 0)
        for group in (reads, writes, overwrites):
            k.append(None)  # (between the groups: no id is None)
            for a in group:
                k.append(a.id if type(a) is ArrayVar else getattr(a, "id", a))
        key = tuple(k)
        seen = self._seen
        p = seen.get(key, False)
        if p is None:  # the second time: a plan from now on (the kernel kept by it)
            p = seen[key] = self.plan(kernel, len(args), reads=reads, writes=writes,
                                      overwrites=overwrites)
        elif p is False:
            if len(seen) >= 256:
                seen.clear()
                self._memo = None
            seen[key] = None
            return None
        return p if p.kernel is kernel else None

    def plan(self, kernel: Kernel, nargs: int, *, reads: Sequence[ArrayVar],
             writes: Sequence[ArrayVar], overwrites: Sequence[ArrayVar] = ()) -> LaunchPlan:
        """A plan for launching ``kernel`` again and again on the same arrays (the same
        variables at the same places among ``nargs`` arguments): see ``launch_planned``."""
        return LaunchPlan(kernel, tuple(reads), tuple(writes), tuple(overwrites), nargs)

    def launch_planned(self, p: LaunchPlan, global_size: Sequence[int],
                       args: Sequence[Any]) -> int:
        """``launch`` of the plan's kernel with ``args`` (its arrays where they were when the
        plan was used first, scalars anywhere): while the tables keep their shape, only the
        transfers a buffer needs, the dependencies, the scalars and the task's rows are
        worked out; otherwise (a buffer not yet on the device, the tables changed) it is a
        plain ``launch`` and the plan is made again from the tables as that launch left
        them."""
        with self.lock:
            return self._planned(p, global_size, args)

    def _planned(self, p: LaunchPlan, global_size: Sequence[int], args: Sequence[Any]) -> int:
        """``launch_planned`` under the lock."""
        if not p.tried and len(args) == p.nargs:  # its first launch: worked out now, it
            p.tried = True  # takes the short path at once when the tables allow it
            self._fill(p, args)
        if p.epoch != self._epoch or len(args) != p.nargs:
            eid = self._launch(p.kernel, global_size, args, p.reads, p.writes, p.over, None)
            if p.epoch >= 0:  # valid once, changed since (other tasks between its launches
                p.misses += 1  # make or drop variables): after a few, plain launches only
                p.dead = p.dead or p.misses > 2
                p.epoch = -1
            if not p.dead and len(args) == p.nargs:
                self._fill(p, args)
            return eid
        self._stats["tasks"] += 1
        keep: list = []
        queue, wait = self._place(self._ready(p.bufs, p.whole, p.wbufs, keep))
        if p.vals is not None:  # (CUDA) values, configuration and packing made before
            if type(global_size) is not tuple:
                global_size = tuple(global_size)
            if global_size != p.geom:
                p.geom = global_size
                p.config = self.device.config(p.built, global_size, None)
                p.packed = self.device.pack(p.built, global_size, p.vals) \
                    if p.packs else None
            pk = p.packed
            if pk is None:
                return self._launch_values(p, args, queue, wait, keep)
            try:
                slots = pk.slots
                for i, j in p.scalars:  # only the scalars are set again
                    a = args[i]
                    slots[j].value = a if type(a) in _SCALARS else self._kernel_args((a,))[0]
                ev = self.device.launch_packed(pk, queue, wait, not self._lazy)
            except Exception:  # noqa: BLE001 - a scalar of another type than its slot's, or the
                p.packs, p.packed = False, None  # driver refused the packed form: cuda.core's
                return self._launch_values(p, args, queue, wait, keep)  # launch from now on
            return self._task(p.kernel.name, ev, queue, keep, p.bufs, p.wbufs, p.rd_ids,
                              p.wr_ids, p.rd_bufs)
        kargs = list(p.kargs)
        for i, j in p.scalars:
            a = args[i]
            kargs[j] = a if type(a) in _SCALARS else self._kernel_args((a,))[0]
        if self._lazy:
            ev = self.device.launch(p.built, global_size, None, kargs, queue, wait, False)
        else:
            ev = self.device.launch(p.built, global_size, None, kargs, queue, wait)
        return self._task(p.kernel.name, ev, queue, keep, p.bufs, p.wbufs, p.rd_ids,
                          p.wr_ids, p.rd_bufs)

    def _launch_values(self, p: LaunchPlan, args: Sequence[Any], queue: int, wait: list,
                       keep: list) -> int:
        """A planned launch through cuda.core with the plan's values (its scalars set)."""
        vals = p.vals
        if p.scalars:
            vals = list(vals)
            for i, j in p.scalars:
                a = args[i]
                vals[j] = a if type(a) in _SCALARS else self._kernel_args((a,))[0]
        ev = self.device.launch_values(p.built, p.config, vals, queue, wait, not self._lazy)
        return self._task(p.kernel.name, ev, queue, keep, p.bufs, p.wbufs, p.rd_ids, p.wr_ids,
                          p.rd_bufs)

    def _fill(self, p: LaunchPlan, args: Sequence[Any]) -> None:
        """Work the plan out from the tables as they are now (valid until they change shape);
        a buffer not on the device leaves it invalid until the next launch; a deferred copy
        among its writes, a buffer written that other variables share (copy-on-write checks
        at each launch) or a variable released since ends it (``dead``: each launch then takes
        the plain path, without working the plan out again)."""
        p.epoch = -1
        table, buffers = self.vars, self.buffers
        arrays = [a.var if type(a) is Whole else a for a in args
                  if type(a) is ArrayVar or type(a) is Whole]
        rows = [table.get(a.id) for a in [*arrays, *p.reads, *p.writes, *p.over]]
        if any(r is None for r in rows):
            p.dead = True
            return
        rd = [table[a.id] for a in p.reads]
        wr = [table[a.id] for a in p.writes]
        if any(v.cow_of is not None or len(buffers[v.buffer].vars) > 1 for v in wr):
            p.dead = True
            return
        bufs = [buffers[b] for b in dict.fromkeys(table[a.id].buffer for a in arrays)]
        if any(b.handle is None for b in bufs):
            return
        ow = {table[a.id].id for a in p.over}
        rids = {v.id for v in rd}
        p.whole = frozenset(v.buffer for v in wr if v.id in ow and v.offset == 0 and
                            v.extent() == (0, buffers[v.buffer].nbytes) and v.id not in rids)
        p.wbufs = frozenset(v.buffer for v in wr)
        p.bufs = tuple(bufs)
        p.built = self.device.build(p.kernel.name, p.kernel.source(self.dialect),
                                    p.kernel.dynamic_shared)
        p.kargs = tuple(self._kernel_args(args))
        values = getattr(self.device, "values", None)
        p.vals = tuple(values(p.kargs)) if values is not None else None
        p.geom = p.config = p.packed = None
        scalars, j = [], 0
        for i, a in enumerate(args):
            if type(a) is ArrayVar:
                j += 2
            else:
                if type(a) is not Whole:
                    scalars.append((i, j))
                j += 1
        p.scalars = tuple(scalars)
        p.rd_ids, p.wr_ids = tuple(v.id for v in rd), tuple(v.id for v in wr)
        p.rd_bufs = tuple(buffers[v.buffer] for v in rd if v.buffer not in p.wbufs)
        p.epoch = self._epoch
