"""tidal.utils._pytree (torch.utils._pytree under compat) against torch's: the same trees flattened by both,
compared by leaves, spec text and counts, key paths, maps and errors."""
from __future__ import annotations

import collections
import typing

import numpy as np
import pytest
import torch
import torch.utils._pytree as tp

import tidal
import tidal.compat as tc
import tidal.utils._pytree as op

P = collections.namedtuple("P", "u v")


class Typed(typing.NamedTuple):
    a: int
    b: list


def _trees(lib):
    return [
        {"a": (1, [2, None]), "b": collections.OrderedDict(x=3), "c": P(4, 5), "d": collections.deque([6], maxlen=3),
         "e": collections.defaultdict(list, {"k": 7}), "f": lib.Size([2, 3])},
        [Typed(1, [2.5, "s"]), (), {}, [[]], None],
        lib.max(lib.tensor([[1.0, 2.0], [3.0, 0.0]]), 0),
        7,
    ]


def _describe(mod, tree):
    leaves, spec = mod.tree_flatten(tree)
    texts = [x if not hasattr(x, "shape") else ("tensor", tuple(x.shape)) for x in leaves]
    paths = [mod.keystr(k) for k, _ in mod.tree_flatten_with_path(tree)[0]]
    rebuilt = mod.tree_unflatten(leaves, spec)
    return texts, repr(spec), spec.num_leaves, spec.num_nodes, spec.num_children, paths, type(rebuilt).__name__


@pytest.mark.parametrize("i", range(4))
def test_flatten_spec_paths_and_rebuild_match_torch(i):
    assert _describe(op, _trees(tc)[i]) == _describe(tp, _trees(torch)[i])


def test_maps_predicates_and_is_leaf_match_torch():
    for mod in (tp, op):
        assert mod.tree_map(lambda x, y: x * 10 + y, (1, [2, {"k": 3}]), (4, [5, {"k": 6}])) == (14, [25, {"k": 36}])
        assert mod.tree_map_only(int, lambda x: -x, [1, "a", 2.0, (3,)]) == [-1, "a", 2.0, (-3,)]
        assert mod.tree_map_only((int, float), lambda x: -x, [1, "a", 2.0]) == [-1, "a", -2.0]
        assert mod.tree_map_only(lambda x: x == "a", str.upper, ["a", "b"]) == ["A", "b"]
        seen = []
        tree = {"x": [1, 2]}
        assert mod.tree_map_(seen.append, tree) is tree and seen == [1, 2]
        assert mod.tree_all(lambda x: x > 0, [1, (2,)]) and not mod.tree_any(lambda x: x > 5, [1, (2,)])
        assert mod.tree_all_only(int, lambda x: x > 0, [1, -2.0]) and mod.tree_any_only(float, lambda x: x < 0, [1, -2.0])
        assert mod.tree_leaves([1, [2], [3, 4]], is_leaf=lambda x: isinstance(x, list) and len(x) == 1) == [1, [2], 3, 4]
        assert mod.tree_structure((1,)) == mod.tree_structure((2,)) != mod.tree_structure([1])
        assert mod.tree_map_with_path(lambda k, x: mod.keystr(k) + str(x), {"a": P(1, 2)}) == \
            {"a": P("['a'].u1", "['a'].v2")}
        assert mod.key_get({"a": [0, {"b": 9}]}, mod.tree_flatten_with_path({"a": [0, {"b": 9}]})[0][1][0]) == 9
        assert list(mod.tree_iter((1, [2]))) == [1, 2] and mod.tree_is_leaf(None) and not mod.tree_is_leaf([])
        assert mod.is_namedtuple(P) and mod.is_namedtuple_instance(Typed(1, [])) and not mod.is_namedtuple((1,))
        assert mod.tree_structure(P(1, 2)).context is P and mod.tree_structure(3).is_leaf()
        assert mod.treespec_pprint(mod.tree_structure({"a": (1, [2, None]), "b": P(3, 4)})) == \
            "{'a': (*, [*, *]), 'b': P(u=*, v=*)}" and mod.treespec_pprint(mod.tree_structure(3)) == "*"


def _errors(mod, lib):
    out = []
    spec = mod.tree_structure((1, 2))
    for call in (lambda: mod.tree_unflatten([1], spec), lambda: mod.tree_unflatten([1], "spec"),
                 lambda: mod.register_pytree_node(list, None, None),
                 lambda: mod.tree_map(lambda x, y: x, (1, 2), [1, 2]),
                 lambda: mod.tree_map(lambda x, y: x, (1, 2), (1, 2, 3))):
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        out.append((type(info.value).__name__, str(info.value)))
    return out


def test_errors_match_torch():
    assert _errors(op, tc) == _errors(tp, torch)


def test_registered_node_and_tidal_tensors():
    class Box:
        def __init__(self, items, tag):
            self.items, self.tag = items, tag

    specs = []
    for mod in (tp, op):
        mod.register_pytree_node(Box, lambda b: (b.items, b.tag), lambda c, tag: Box(list(c), tag),
                                 flatten_with_keys_fn=lambda b: ([(mod.GetAttrKey("items"), b.items)], b.tag))
        leaves, spec = mod.tree_flatten({"box": Box([1, 2], "t")})
        out = mod.tree_unflatten([x + 1 for x in leaves], spec)["box"]
        specs.append((leaves, repr(spec), out.items, out.tag))
        with pytest.raises(ValueError, match="Did not find a flatten_with_keys_fn"):
            class Bare:
                pass
            mod.register_pytree_node(Bare, lambda b: ([], None), lambda c, _: Bare())
            mod.tree_flatten_with_path(Bare())
    assert specs[0] == specs[1]
    params = {"w": tidal.ones(2, 3), "b": [tidal.zeros(3)]}
    doubled = op.tree_map(lambda t: t * 2 + 1, params)
    np.testing.assert_allclose(doubled["w"].numpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(doubled["b"][0].numpy(), np.ones(3))
    assert op.tree_leaves(tidal.max(tidal.tensor([1.0, 3.0]), 0))[1].item() == 1
    from tidal.fx.immutable_collections import immutable_dict, immutable_list
    from torch.fx.immutable_collections import immutable_dict as tdict, immutable_list as tlist
    assert repr(op.tree_structure(immutable_dict(a=immutable_list([1, 2])))) == \
        repr(tp.tree_structure(tdict(a=tlist([1, 2]))))
    from tidal.compat._importer import target_name
    assert target_name("torch.utils._pytree") == "tidal.utils._pytree"  # what `import torch.utils._pytree` loads


def test_loaded_with_torch():
    # torch loads torch.utils._pytree and torch.utils.dlpack at `import torch`; a fresh interpreter checks tidal's
    import subprocess
    import sys
    code = ("import tidal.compat as torch; assert torch.utils._pytree.tree_leaves([1, (2,)]) == [1, 2]; "
            "assert callable(torch.utils.dlpack.from_dlpack); print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-500:]
