"""Line diffs of IR that stay fast on graphs of many thousand nodes: lines occurring once in each text
(in SSA IR most do) are matched first, keeping the longest run of them in the same order (patience
diffing); only the short stretches between two such anchors go through difflib, whose matching is
quadratic on long inputs. A stretch still too long for it counts as replaced whole."""
from __future__ import annotations

import bisect
import difflib

MAX_GAP_CELLS = 4_000_000  # difflib within a stretch of a x b lines only when a * b is below this


def opcodes(a: list, b: list) -> list:
    """(tag, i1, i2, j1, j2) turning `a` into `b`, as difflib's get_opcodes (equal, replace, delete, insert)."""
    ops: list = []
    _diff(a, 0, len(a), b, 0, len(b), ops)
    return _merge(ops)


def grouped(ops: list, context: int = 2) -> list:
    """The opcodes as hunks: each change with up to `context` equal lines around it; changes closer
    than twice that share a hunk."""
    if not ops:
        return []
    ops = list(ops)
    if ops[0][0] == "equal":  # only the last `context` lines before the first change
        tag, i1, i2, j1, j2 = ops[0]
        ops[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if ops[-1][0] == "equal":  # only the first `context` lines after the last change
        tag, i1, i2, j1, j2 = ops[-1]
        ops[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    hunks, hunk = [], []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 - i1 > 2 * context:
            hunk.append((tag, i1, i1 + context, j1, j1 + context))
            hunks.append(hunk)
            hunk = []
            i1, j1 = i2 - context, j2 - context
        hunk.append((tag, i1, i2, j1, j2))
    hunks.append(hunk)
    return [h for h in hunks if any(op[0] != "equal" for op in h)]


def _diff(a, a0, a1, b, b0, b1, ops) -> None:
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:  # common head
        ops.append(("equal", a0, a0 + 1, b0, b0 + 1))
        a0, b0 = a0 + 1, b0 + 1
    tail = []
    while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:  # common tail
        a1, b1 = a1 - 1, b1 - 1
        tail.append(("equal", a1, a1 + 1, b1, b1 + 1))
    anchors = _anchors(a, a0, a1, b, b0, b1)
    if anchors:
        i, j = a0, b0
        for ai, bj in anchors:
            _diff(a, i, ai, b, j, bj, ops)
            ops.append(("equal", ai, ai + 1, bj, bj + 1))
            i, j = ai + 1, bj + 1
        _diff(a, i, a1, b, j, b1, ops)
    else:
        _small(a, a0, a1, b, b0, b1, ops)
    ops.extend(reversed(tail))


def _anchors(a, a0, a1, b, b0, b1) -> list:
    """(i, j) pairs of lines unique in both stretches, the longest run of them in the same order."""
    count_a: dict = {}
    for i in range(a0, a1):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    where_a = {a[i]: i for i in range(a0, a1) if count_a[a[i]] == 1}
    count_b: dict = {}
    for j in range(b0, b1):
        count_b[b[j]] = count_b.get(b[j], 0) + 1
    pairs = [(where_a[b[j]], j) for j in range(b0, b1) if count_b[b[j]] == 1 and b[j] in where_a]
    return _increasing(pairs)


def _increasing(pairs: list) -> list:
    """The longest subsequence of `pairs` (in j order) whose i increase too (patience sorting)."""
    tops, links, back = [], [], []
    for k, (i, _) in enumerate(pairs):
        pos = bisect.bisect_left(tops, i)
        if pos == len(tops):
            tops.append(i)
            links.append(k)
        else:
            tops[pos], links[pos] = i, k
        back.append(links[pos - 1] if pos else -1)
    out, k = [], links[-1] if links else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    return out[::-1]


def _small(a, a0, a1, b, b0, b1, ops) -> None:
    """A stretch without anchors: difflib when small enough, else one replacement."""
    if a0 == a1 and b0 == b1:
        return
    if a0 == a1 or b0 == b1 or (a1 - a0) * (b1 - b0) > MAX_GAP_CELLS:
        tag = "insert" if a0 == a1 else "delete" if b0 == b1 else "replace"
        ops.append((tag, a0, a1, b0, b1))
        return
    matcher = difflib.SequenceMatcher(None, a[a0:a1], b[b0:b1], autojunk=False)
    ops.extend((tag, i1 + a0, i2 + a0, j1 + b0, j2 + b0) for tag, i1, i2, j1, j2 in matcher.get_opcodes())


def _merge(ops: list) -> list:
    """Adjacent opcodes of the same tag joined (one `equal` per run of equal lines)."""
    merged: list = []
    for op in ops:
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if merged and merged[-1][0] == op[0] and merged[-1][2] == op[1] and merged[-1][4] == op[3]:
            last = merged[-1]
            merged[-1] = (op[0], last[1], op[2], last[3], op[4])
        else:
            merged.append(op)
    return merged
