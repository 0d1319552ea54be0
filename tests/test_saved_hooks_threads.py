"""Saved-tensor hooks are per thread, as torch's: a block entered on one thread neither packs what
another thread records meanwhile nor is disabled by another thread's disable_saved_tensors_hooks.
Each program runs under torch and under tidal and the counts must agree."""
from __future__ import annotations

import threading

import pytest
import torch

import tidal


def _record(L) -> float:
    x = L.ones(3, requires_grad=True)
    y = (x * x).exp().sum()       # mul and exp save tensors
    y.backward()
    return round(float(x.grad.sum()), 4)


def other_thread_records_plainly(L) -> tuple:
    """Main thread inside a block while a second thread records and backpropagates."""
    log: list = []
    inside, done = threading.Event(), threading.Event()
    result: dict = {}

    def worker():
        inside.wait(10)
        result["grad"] = _record(L)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    with L.autograd.graph.saved_tensors_hooks(lambda v: log.append("pack") or v, lambda v: log.append("unpack") or v):
        inside.set()
        done.wait(10)
        worker_packs = len(log)
        main_grad = _record(L)
    t.join()
    return worker_packs, log.count("pack"), log.count("unpack"), result["grad"], main_grad


def each_thread_its_own_block(L) -> tuple:
    """Two threads, each in its own block at the same time: each block packs its own thread's tensors."""
    logs = {"a": [], "b": []}
    barrier = threading.Barrier(2, timeout=10)
    grads = {}

    def run(name):
        log = logs[name]
        with L.autograd.graph.saved_tensors_hooks(lambda v: log.append(1) or v, lambda v: log.append(-1) or v):
            barrier.wait()        # both blocks are open now
            grads[name] = _record(L)
            barrier.wait()

    threads = [threading.Thread(target=run, args=(n,)) for n in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(logs["a"]) == sorted(logs["b"]), logs["a"].count(1), logs["a"].count(-1), grads["a"], grads["b"]


def disable_is_per_thread(L) -> tuple:
    """disable_saved_tensors_hooks on the main thread does not stop a block on another thread."""
    G = L.autograd.graph
    outcome = {}

    def worker():
        try:
            with G.saved_tensors_hooks(lambda v: v, lambda v: v):
                outcome["entered"] = True
        except RuntimeError as err:
            outcome["entered"] = str(err)

    with G.disable_saved_tensors_hooks("no hooks here"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        with pytest.raises(RuntimeError, match="no hooks here"):
            with G.saved_tensors_hooks(lambda v: v, lambda v: v):
                pass
    return outcome["entered"]


@pytest.mark.parametrize("program", [other_thread_records_plainly, each_thread_its_own_block, disable_is_per_thread])
def test_hooks_are_per_thread_as_torch(program):
    theirs, ours = program(torch), program(tidal)
    assert ours == theirs


def test_node_init_is_plain_again_after_blocks_on_two_threads():
    from tidal.autograd import graph, saved_hooks
    each_thread_its_own_block(tidal)
    assert graph.Node.__init__ is saved_hooks._plain_init and saved_hooks._open[0] == 0
