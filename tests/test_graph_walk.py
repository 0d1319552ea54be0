"""autograd.graph_walk: the one graph walk that forward AD, the func transforms and checkpointing share.
The nodes it reaches are compared with a walk over torch's graph of the same program."""
import torch

import tidal
from tidal.autograd.graph import AccumulateGrad
from tidal.autograd.graph_walk import leaves_reached, roots_of, walk


def _program(m, a, b):
    c = a * b
    d = c.exp() + a            # a and c fan out: a diamond
    return (d * c).sum(), c


def _torch_names(root) -> list:
    seen, stack, names = set(), [root], []
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        names.append(n.name())
        stack.extend(x for x, _ in n.next_functions)
    return sorted(names)


def test_reaches_torchs_nodes_each_once():
    a, b = tidal.randn(3, requires_grad=True), tidal.randn(3, requires_grad=True)
    y, _ = _program(tidal, a, b)
    ta, tb = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    ty, _ = _program(torch, ta, tb)
    nodes = list(walk([y.grad_fn]))
    assert len({id(n) for n in nodes}) == len(nodes)
    assert sorted(n.name() for n in nodes) == _torch_names(ty.grad_fn)
    assert {id(v) for v in leaves_reached([y.grad_fn])} == {id(a), id(b)}


def test_prune_stops_before_a_node_and_its_inputs():
    a, b = tidal.randn(3, requires_grad=True), tidal.randn(3, requires_grad=True)
    y, c = _program(tidal, a, b)
    pruned = list(walk([y.grad_fn], prune=lambda n: n is c.grad_fn))
    assert c.grad_fn not in pruned
    # a is still reached through `d = c.exp() + a`; b only through c
    assert [id(v) for v in leaves_reached([y.grad_fn], prune=lambda n: n is c.grad_fn)] == [id(a)]
    assert not list(walk([y.grad_fn], prune=lambda n: True))


def test_roots_skip_tensors_without_history():
    a = tidal.randn(2, requires_grad=True)
    b = a * 2
    assert roots_of([a, b, tidal.ones(2), 3.0]) == [b.grad_fn]
    assert list(walk([None, None])) == []


def test_rewiring_during_the_walk_does_not_change_it():
    a, b = tidal.randn(3, requires_grad=True), tidal.randn(3, requires_grad=True)
    y, _ = _program(tidal, a, b)
    before = [id(n) for n in walk([y.grad_fn])]
    after, saved = [], {}
    for node in walk([y.grad_fn]):
        after.append(id(node))
        if not isinstance(node, AccumulateGrad):
            saved[node] = node.next_functions
            node.next_functions = ()        # a caller cutting the graph as it goes
    for node, nexts in saved.items():
        node.next_functions = nexts
    assert after == before


def test_deep_graph_has_no_recursion_limit():
    x = tidal.randn(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y + 1
    assert sum(1 for _ in walk([y.grad_fn])) == 3001
