"""Recording the pass pipeline while a model compiles (tscript.ir.passes.pipeline.observe_passes): the
IR before the first pass of each pipeline run, and after every pass its time, node counts and, when
it changed the graph, the IR it left."""
from __future__ import annotations


class PassRecorder:
    """An observer of pipeline runs; `runs` holds what the report's passes section shows. `progress`
    (a tscript_runtime.progress.Progress) is told each pass as it ends."""

    def __init__(self, progress=None):
        self.runs: list = []
        self.progress = progress

    def start(self, graph) -> None:
        self.runs.append({"title": "", "input": str(graph), "passes": [], "nodes": count_nodes(graph)})

    def after(self, name: str, graph, seconds: float, changed: bool) -> None:
        run = self.runs[-1]
        before = run["passes"][-1]["nodes_after"] if run["passes"] else run["nodes"]
        run["passes"].append({"name": name, "seconds": seconds, "changed": changed, "nodes_before": before,
                              "nodes_after": count_nodes(graph) if changed else before,
                              "ir": str(graph) if changed else None})
        if self.progress is not None:
            self.progress.step(f"optimizing: {name} ({len(run['passes'])} passes done in run {len(self.runs)})")

    def end(self, graph) -> None:
        if self.progress is not None:
            self.progress.step("planning and emitting native code")


class PassProgress:
    """An observer that only tells `progress` (tscript_runtime.progress.Progress) which pass runs: what
    `tscript trace` shows while a large model compiles."""

    def __init__(self, progress):
        self.progress = progress
        self.done = 0

    def start(self, graph) -> None:
        self.done = 0
        self.progress.step(f"optimizing a graph of {count_nodes(graph)} nodes")

    def after(self, name: str, graph, seconds: float, changed: bool) -> None:
        self.done += 1
        self.progress.step(f"optimizing: {name} done ({self.done} passes)")

    def end(self, graph) -> None:
        self.progress.step("planning and emitting native code")


def count_nodes(graph) -> int:
    """Nodes of `graph`, those of nested blocks included."""
    return sum(1 for _ in graph.all_nodes())
