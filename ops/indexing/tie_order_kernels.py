"""The algorithms of ops/indexing/tie_order.py, compiled with numba (loaded on first use, under vm.codegen's numba
lock).

libstdc++'s std::sort (introsort), std::nth_element, std::partial_sort and torch's kthvalue quickselect,
step for step, on a permutation `perm` of the rows of a key array `key` (n, m); see ops/indexing/tie_order.py for
why and for the comparison modes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

ASC, DESC, LEX = 0, 1, 2
_THRESHOLD = 16  # libstdc++'s _S_threshold: introsort leaves runs this short to insertion sort


@njit(cache=True, inline="always")
def _less(key, a, b, mode):
    """Whether row `a` orders before row `b` under `mode` (see the module's table)."""
    if mode == LEX:
        for c in range(key.shape[1]):
            x, y = key[a, c], key[b, c]
            if x < y:
                return True
            if x > y:
                return False
        return False
    x, y = key[a, 0], key[b, 0]
    if mode == ASC:
        return (x == x and y != y) or x < y
    return (x != x and y == y) or x > y


@njit(cache=True)
def _lg(n):
    r = -1
    while n:
        n >>= 1
        r += 1
    return r


@njit(cache=True)
def _linear_insert(key, perm, i, first, mode):
    """libstdc++'s __unguarded_linear_insert: move perm[i] left past the elements above it."""
    v = perm[i]
    j = i
    while j > first and _less(key, v, perm[j - 1], mode):
        perm[j] = perm[j - 1]
        j -= 1
    perm[j] = v


@njit(cache=True)
def _insertion_sort(key, perm, first, last, mode):
    """libstdc++'s __insertion_sort: an element below the first goes straight to the front.

    (The front test only differs from a plain insertion where the order is not strict weak: NaN
    under LEX, as in torch's mode.)"""
    for i in range(first + 1, last):
        if _less(key, perm[i], perm[first], mode):
            v = perm[i]
            perm[first + 1:i + 1] = perm[first:i].copy()
            perm[first] = v
        else:
            _linear_insert(key, perm, i, first, mode)


@njit(cache=True)
def _adjust_heap(key, perm, first, hole, length, value, mode):
    """libstdc++'s __adjust_heap then __push_heap: sift the hole down to a leaf, `value` back up."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(key, perm[first + child], perm[first + child - 1], mode):
            child -= 1
        perm[first + hole] = perm[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        perm[first + hole] = perm[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _less(key, perm[first + parent], value, mode):
        perm[first + hole] = perm[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    perm[first + hole] = value


@njit(cache=True)
def _heap_select(key, perm, first, middle, last, mode):
    """libstdc++'s __heap_select: a max-heap of [first, middle) keeping the `middle - first` least."""
    length = middle - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(key, perm, first, parent, length, perm[first + parent], mode)
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if _less(key, perm[i], perm[first], mode):  # __pop_heap(first, middle, i)
            v = perm[i]
            perm[i] = perm[first]
            _adjust_heap(key, perm, first, 0, length, v, mode)


@njit(cache=True)
def _sort_heap(key, perm, first, last, mode):
    while last - first > 1:
        last -= 1
        v = perm[last]
        perm[last] = perm[first]
        _adjust_heap(key, perm, first, 0, last - first, v, mode)


@njit(cache=True)
def _partition_pivot(key, perm, first, last, mode):
    """libstdc++'s __unguarded_partition_pivot: median of (first+1, mid, last-1) to first, then split."""
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if _less(key, perm[a], perm[b], mode):
        if _less(key, perm[b], perm[c], mode):
            m = b
        elif _less(key, perm[a], perm[c], mode):
            m = c
        else:
            m = a
    elif _less(key, perm[a], perm[c], mode):
        m = a
    elif _less(key, perm[b], perm[c], mode):
        m = c
    else:
        m = b
    perm[first], perm[m] = perm[m], perm[first]
    pivot = perm[first]
    lo, hi = first + 1, last
    while True:
        while lo < last and _less(key, perm[lo], pivot, mode):
            lo += 1
        hi -= 1
        while hi > first and _less(key, pivot, perm[hi], mode):
            hi -= 1
        if not lo < hi:
            return lo
        perm[lo], perm[hi] = perm[hi], perm[lo]
        lo += 1


@njit(cache=True)
def _introsort(key, perm, first, last, mode):
    """std::sort: introsort down to runs of 16 (heap sort past depth 2*lg(n)), then insertion sort.

    libstdc++ recurses into the right part and loops on the left; the parts are disjoint and each
    carries its own depth budget, so a stack of (first, last, depth) gives the same result.
    """
    if last - first < 2:
        return
    stack = [(first, last, 2 * _lg(last - first))]
    while stack:
        lo, hi, depth = stack.pop()
        while hi - lo > _THRESHOLD:
            if depth == 0:
                _heap_select(key, perm, lo, hi, hi, mode)
                _sort_heap(key, perm, lo, hi, mode)
                break
            depth -= 1
            cut = _partition_pivot(key, perm, lo, hi, mode)
            stack.append((cut, hi, depth))
            hi = cut
    # libstdc++'s __final_insertion_sort: the first 16 with the front test, the rest without
    if last - first > _THRESHOLD:
        _insertion_sort(key, perm, first, first + _THRESHOLD, mode)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(key, perm, i, first, mode)
    else:
        _insertion_sort(key, perm, first, last, mode)


@njit(cache=True)
def _nth_element(key, perm, first, nth, last, mode):
    """std::nth_element (libstdc++'s __introselect)."""
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(key, perm, first, nth + 1, last, mode)
            perm[first], perm[nth] = perm[nth], perm[first]
            return
        depth -= 1
        cut = _partition_pivot(key, perm, first, last, mode)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(key, perm, first, last, mode)


@njit(cache=True)
def sort_rows(rows, mode):
    """std::sort of each row of `rows` (R, n): the permutations, (R, n) int64."""
    count, n = rows.shape
    out = np.empty((count, n), np.int64)
    for r in range(count):
        key = rows[r].reshape((n, 1))
        perm = np.arange(n)
        _introsort(key, perm, 0, n, mode)
        out[r] = perm
    return out


@njit(cache=True)
def topk_rows(rows, k, mode, sorted_):
    """torch's topk_impl_loop per row: partial_sort when 64k <= n, else nth_element (+ sort of k-1)."""
    count, n = rows.shape
    out = np.empty((count, k), np.int64)
    for r in range(count):
        key = rows[r].reshape((n, 1))
        perm = np.arange(n)
        if k * 64 <= n:
            _heap_select(key, perm, 0, k, n, mode)
            _sort_heap(key, perm, 0, k, mode)
        else:
            _nth_element(key, perm, 0, k - 1, n, mode)
            if sorted_:
                _introsort(key, perm, 0, k - 1, mode)
        out[r] = perm[:k]
    return out


@njit(cache=True)
def quick_select_rows(rows, k):
    """torch's quick_select_template (kthvalue) per row, comparing with gt_or_nan: the k-th's index."""
    count, n = rows.shape
    out = np.empty(count, np.int64)
    for r in range(count):
        key = rows[r].reshape((n, 1))
        arr = np.arange(n)
        lo, hi = 0, n - 1
        while True:
            if hi <= lo:
                break
            if hi == lo + 1:
                if _less(key, arr[lo], arr[hi], DESC):
                    arr[lo], arr[hi] = arr[hi], arr[lo]
                break
            p = lo + (hi - lo) // 2
            arr[p], arr[lo + 1] = arr[lo + 1], arr[p]
            if _less(key, arr[lo + 1], arr[hi], DESC):
                arr[lo + 1], arr[hi] = arr[hi], arr[lo + 1]
            if _less(key, arr[lo], arr[hi], DESC):
                arr[lo], arr[hi] = arr[hi], arr[lo]
            if _less(key, arr[lo + 1], arr[lo], DESC):
                arr[lo + 1], arr[lo] = arr[lo], arr[lo + 1]
            i, j = lo + 1, hi
            piv = arr[lo]
            while True:
                i += 1
                while i < hi and _less(key, piv, arr[i], DESC):
                    i += 1
                j -= 1
                while j > lo and _less(key, arr[j], piv, DESC):
                    j -= 1
                if j < i:
                    break
                arr[i], arr[j] = arr[j], arr[i]
            arr[lo], arr[j] = arr[j], arr[lo]
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
        out[r] = arr[k]
    return out


@njit(cache=True)
def sort_lex(key):
    perm = np.arange(key.shape[0])
    _introsort(key, perm, 0, key.shape[0], LEX)
    return perm
