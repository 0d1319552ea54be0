"""tidal.fx.subgraph_rewriter.replace_pattern_with_filters against torch's: match filters (given the
InternalMatch), ignore_literals, a replacement callback, node_name_match; compared by the rewritten code and by
the ReplacedPatterns (anchor, nodes_map, the nodes each replacement added)."""
import numpy as np
import torch
import torch.fx
from torch.fx.subgraph_rewriter import replace_pattern_with_filters as torch_rewrite

import tidal
import tidal.compat as tc
from tidal.fx.passes.utils.matcher_utils import InternalMatch
from tidal.fx.subgraph_rewriter import ReplacedPatterns, replace_pattern_with_filters


def _program(lib):
    def f(x, y):
        a = lib.relu(x + y) * 2
        b = lib.relu(a + 3) * 5
        c = lib.relu(b + y) * 2
        return a + b + c
    return f


def _pattern(lib):
    return lambda u, v: lib.relu(u + v) * 2


def _replacement(lib):
    return lambda u, v: lib.sigmoid(v - u) * 2


def _describe(results):
    return [(r.anchor.name, sorted((k.name, getattr(v, "name", v)) for k, v in r.nodes_map.items()),
             [n.name for n in r.replacements]) for r in results]


def _run(lib, rewrite):
    seen = []

    def inputs_are_placeholders(match, original_graph, pattern_graph):
        seen.append(type(match).__name__)
        return all(getattr(n, "op", None) == "placeholder" for n in match.placeholder_nodes[1:])
    out = []
    gm = lib.fx.symbolic_trace(_program(lib))
    out.append(_describe(rewrite(gm, _pattern(lib), _replacement(lib), match_filters=[inputs_are_placeholders])))
    out.append(gm.code)
    gm2 = lib.fx.symbolic_trace(_program(lib))
    made = rewrite(gm2, _pattern(lib), None, ignore_literals=True,
                   replacement_callback=lambda m, og, pg: lib.fx.symbolic_trace(_replacement(lib)).graph)
    out += [_describe(made), gm2.code]
    gm3 = lib.fx.symbolic_trace(_program(lib))
    out += [_describe(rewrite(gm3, _pattern(lib), _replacement(lib), node_name_match="mul_1")), gm3.code]
    return out, seen, gm2


def test_filters_literals_callback_and_names_match_torch():
    want, seen_t, gref = _run(torch, torch_rewrite)
    got, seen_o, gm = _run(tc, replace_pattern_with_filters)
    assert got == want
    assert seen_o == seen_t == ["InternalMatch"] * len(seen_t) and len(seen_t) == 2
    assert len(got[2]) == 3  # ignore_literals: `relu(a + 3) * 5` matches too
    x, y = np.array([0.5, -1.0], np.float32), np.array([2.0, 0.25], np.float32)
    np.testing.assert_allclose(gm(tidal.tensor(x), tidal.tensor(y)).numpy(),
                               gref(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-6)


def test_records_and_plain_replace_pattern_still_match():
    gm = tc.fx.symbolic_trace(_program(tc))
    done = replace_pattern_with_filters(gm, _pattern(tc), _replacement(tc))
    assert all(isinstance(r, ReplacedPatterns) for r in done) and len(done) == 2
    assert done[0].anchor.op == "call_function" and done[0].replacements[-1].users
    m = InternalMatch(anchors=[])
    assert m.nodes_map == {} and m.placeholder_nodes == [] and m.name_node_map == {}
    gref = torch.fx.symbolic_trace(_program(torch))
    torch.fx.replace_pattern(gref, _pattern(torch), _replacement(torch))
    gm2 = tc.fx.symbolic_trace(_program(tc))
    tc.fx.replace_pattern(gm2, _pattern(tc), _replacement(tc))
    assert gm2.code == gref.code
