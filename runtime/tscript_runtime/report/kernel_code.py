"""Every native kernel of an Executable as the report shows it: its subgraph, its schedule from the
native plan, the LLVM IR the emitter wrote for it, that IR optimized for this CPU and its assembly, the
vector width it got, and a warning when none of its loops vectorized.

The kernels' module is emitted again here (without the whole-graph entry, which only calls them) and
optimized once; its functions are split out per kernel (a kernel's own function and its helpers
`<symbol>_*`). Kernels that emit the same code share one function (native/emit.py `symbols`).
"""
from __future__ import annotations

import re
from dataclasses import replace

MAX_CODE_LINES = 3000  # per text shown; longer ones are cut (the lines left out are counted)
_LABEL = re.compile(r"^([\w.$-]+):")
_TARGETS = re.compile(r"label %([\w.$-]+)")
_LOOP_MD = re.compile(r"!llvm\.loop !(\d+)")
_VECTOR = re.compile(r"<(\d+) x (float|double|i64|i32)>")
_MD_DEF = re.compile(r"^!(\d+) = (?:distinct )?!\{(.*)\}$", re.M)
ELEMENT_BITS = {"float": 32, "double": 64, "i64": 64, "i32": 32}


def kernel_facts(executable, doc: dict, ir) -> list[dict]:
    """One dict per kernel of `executable`'s native plan (empty without one); `doc` is its graph
    document and `ir` its ir_text.IRText."""
    plan = executable.plan
    if plan is None or not plan.kernels:
        return []
    from ..native.emit import symbols
    names = symbols(plan)
    code, reason = _code(plan)
    groups = _group_nodes(doc)
    steps = {s.node: i for i, s in enumerate(plan.entry or [])}
    first: dict = {}
    facts = []
    for name, k in plan.kernels.items():
        symbol = names[name]
        node, index = groups.get(name, (None, None))
        fact = {"name": name, "template": k.template, "tile": k.tile, "split_min": k.split_min,
                "symbol": symbol, "shares": first.setdefault(symbol, name), "spec": _spec(k.spec),
                "value": node["outputs"][0]["name"] if node and node["outputs"] else None,
                "source": node.get("source") if node else None,
                "step": steps.get(index) if index is not None else None,
                "subgraph": _subgraph_text(ir, node), "reason": reason}
        if code is not None:
            fact.update(_function_facts(code, symbol) if fact["shares"] == name else _shared(facts, fact["shares"]))
        facts.append(fact)
    return facts


def _code(plan) -> tuple:
    """(emitted IR, optimized IR, assembly, loop metadata) of the plan's kernels, or (None, why not)."""
    try:
        from ..native.emit import emit_module
        from ..native.target import optimized_ir_and_assembly
        emitted = str(emit_module(replace(plan, layout=None)))
        optimized, asm = optimized_ir_and_assembly(emitted)
    except Exception as e:  # no llvmlite here, an LLVM error: the report says so and goes on
        return None, f"{type(e).__name__}: {str(e).strip()[:200]}"
    return (_split_ir(emitted), _split_ir(optimized), _split_asm(asm), _vectorized_loops(optimized)), ""


def _function_facts(code: tuple, symbol: str) -> dict:
    emitted, optimized, asm, vector_md = code
    mine = [n for n in optimized if n == symbol or n.startswith(symbol + "_")]
    text = "\n\n".join(optimized[n] for n in mine)
    lanes, element = _widest(text)
    loops = [_loop_kind(loop, vector_md) for n in mine for loop in _loops(optimized[n])]
    warnings = []
    if loops and "vector" not in loops:
        warnings.append(f"none of this kernel's {len(loops)} loop{'s' * (len(loops) != 1)} vectorized: it "
                        f"computes one element per instruction")
    return {"llvm": cut("\n\n".join(emitted[n] for n in emitted if n in mine)), "optimized": cut(text),
            "asm": cut("\n".join(asm[n] for n in asm if n in mine)), "lanes": lanes, "element": element,
            "bits": lanes * ELEMENT_BITS.get(element, 0), "loops": len(loops),
            "vector_loops": loops.count("vector"), "remainder_loops": loops.count("remainder"), "warnings": warnings}


def _shared(facts: list, first: str) -> dict:
    """A kernel whose code is `first`'s: its findings, not its text again."""
    same = next(f for f in facts if f["name"] == first)
    return {key: same[key] for key in ("lanes", "element", "bits", "loops", "vector_loops", "remainder_loops",
                                       "warnings") if key in same}


def cut(text: str, limit: int = MAX_CODE_LINES) -> str:
    lines = text.split("\n")
    if len(lines) <= limit:
        return text
    return "\n".join(lines[:limit] + [f"... ({len(lines) - limit} more lines)"])


def _split_ir(text: str) -> dict:
    """Function name -> its text, for every function defined in LLVM IR `text`."""
    out = {}
    for chunk in text.split("\ndefine ")[1:]:
        body = chunk[:chunk.find("\n}") + 2] if "\n}" in chunk else chunk
        name = body.split("(")[0].split("@")[-1].strip('"')
        out[name] = "define " + body
    return out


def _split_asm(text: str) -> dict:
    """Function name -> its assembly, from `.type NAME,@function` to its `.size NAME` line."""
    out, name, lines = {}, None, []
    for line in text.split("\n"):
        if line.startswith("\t.type\t") and line.endswith(",@function"):
            name, lines = line[len("\t.type\t"):-len(",@function")], []
        if name is not None:
            lines.append(line)
            if line.startswith(f"\t.size\t{name},"):
                out[name], name = "\n".join(lines), None
    return out


def _vectorized_loops(module_text: str) -> set:
    """Ids of the loop metadata nodes that say `llvm.loop.isvectorized` (a vectorized loop's own
    scalar remainder carries it too)."""
    defs = {int(m.group(1)): m.group(2) for m in _MD_DEF.finditer(module_text)}
    flags = {i for i, body in defs.items() if '"llvm.loop.isvectorized"' in body}
    return {i for i, body in defs.items() if any(int(r) in flags for r in re.findall(r"!(\d+)", body))}


def _loops(function: str) -> list:
    """(header label, latch label, the lines from header to latch) of each loop of a function: a
    branch back to a block at or before the branching one."""
    blocks, index = [], {}
    for line in function.split("\n"):
        m = _LABEL.match(line)
        if m:
            index[m.group(1)] = len(blocks)
            blocks.append((m.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    loops = []
    for i, (label, lines) in enumerate(blocks):
        for line in lines:
            if line.lstrip().startswith("br "):
                for target in _TARGETS.findall(line):
                    j = index.get(target)
                    if j is not None and j <= i:
                        body = [x for _, b in blocks[j:i + 1] for x in b]
                        loops.append((blocks[j][0], label, body, line))
    return loops


def _loop_kind(loop: tuple, vector_md: set) -> str:
    """"vector" (its body computes on vectors), "remainder" (the scalar tail of a vectorized loop) or
    "scalar"."""
    header, _, body, branch = loop
    if "vector.body" in header or any(_VECTOR.search(x) for x in body):
        return "vector"
    md = _LOOP_MD.search(branch)
    return "remainder" if md and int(md.group(1)) in vector_md else "scalar"


def _widest(text: str) -> tuple[int, str]:
    """The most lanes of any float/int vector the code computes on, and their element type."""
    best = (1, "")
    for lanes, element in _VECTOR.findall(text):
        if int(lanes) * ELEMENT_BITS[element] > best[0] * ELEMENT_BITS.get(best[1], 0):
            best = (int(lanes), element)
    return best


def _spec(spec) -> dict:
    return {"rank": spec.rank, "inputs": list(spec.inputs), "in_dtypes": [str(d) for d in spec.in_dtypes],
            "in_shapes": [str(s) for s in spec.in_shapes], "out_dtypes": [str(d) for d in spec.out_dtypes],
            "iteration": str(spec.iteration), "row": spec.row}


def _group_nodes(doc: dict) -> dict:
    """Kernel name -> (group node, its index among the top-level nodes or None inside a block)."""
    found = {}

    def walk(nodes, top):
        for i, node in enumerate(nodes):
            kernel = node.get("attrs", {}).get("kernel")
            if isinstance(kernel, str):
                found[kernel] = (node, i if top else None)
            for block in node.get("blocks", []):
                walk(block["nodes"], False)
    walk(doc["nodes"], True)
    return found


def _subgraph_text(ir, node) -> str:
    """The `with tscript::FusionGroup_N = graph(...)` section of the IR for a group node."""
    if ir is None or node is None or not node["outputs"]:
        return ""
    line = ir.line_of(node["outputs"][0]["name"])
    label = ir.subgraph.get(line) if line is not None else None
    return "\n".join(t for t, s in zip(ir.lines, ir.section) if label and s == label)
