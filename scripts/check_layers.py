#!/usr/bin/env python3
"""Checks the folder graph of src/ against docs/architecture.md.

The graph between the markers `<!-- layers: begin -->` and
`<!-- layers: end -->` of docs/architecture.md lists, per folder (module),
the folders its code may include. This script fails, one line per problem,
when
  - product code includes a folder its line does not list,
  - a line lists a folder the product code no longer includes (the map
    would go stale),
  - a folder of src/ has no line, or a line names no folder,
  - the graph has a cycle,
  - test code (`*_test.cc`, `*_benchmark.cc`, `*_fuzzer.cc`, `testing/`)
    includes a folder that depends on the folder under test: tests may use
    any lower or unrelated folder (the simulated API server, say), never
    close a cycle.
A module is a folder under src/, and each folder under src/cli/.
Generated protobuf headers (`kubelet/...`) belong to the module `proto`.
  scripts/check_layers.py [REPO_ROOT]
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = {".cc", ".h", ".in"}


def module_of_dir(src, path):
    parts = path.relative_to(src).parts
    if parts[0] == "cli" and len(parts) > 1:
        return "cli/" + parts[1]
    return parts[0]


def module_of_include(target, modules):
    parts = target.split("/")
    if parts[0] == "kubelet":
        return "proto"
    if parts[0] == "cli" and len(parts) > 2:
        return "cli/" + parts[1]
    return parts[0] if parts[0] in modules else None


def is_test_code(path):
    name = path.name
    return ("testing" in path.parts or name.endswith("_test.cc") or
            name.endswith("_benchmark.cc") or name.endswith("_fuzzer.cc"))


def read_graph(doc):
    text = doc.read_text()
    match = re.search(r"<!-- layers: begin -->(.*?)<!-- layers: end -->", text, re.S)
    if not match:
        sys.exit(f"check_layers: no layers block in {doc}")
    graph = {}
    for line in match.group(1).splitlines():
        line = line.strip()
        if not line or line.startswith("```"):
            continue
        name, _, deps = line.partition(" ")
        graph[name] = set(deps.split())
    return graph


def find_cycle(graph):
    state = {}

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return path + [node, dep]
            if dep not in state:
                cycle = visit(dep, path + [node])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def closure(graph, node):
    seen, todo = set(), [node]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    src = root / "src"
    graph = read_graph(root / "docs" / "architecture.md")
    modules = {p.name for p in src.iterdir() if p.is_dir() and p.name != "cli"}
    modules |= {"cli/" + p.name for p in (src / "cli").iterdir() if p.is_dir()}
    modules.add("proto")
    problems = []
    for m in sorted(modules - set(graph)):
        problems.append(f"docs/architecture.md: no line for the folder {m}")
    for m in sorted(set(graph) - modules):
        problems.append(f"docs/architecture.md: the line for {m} names no folder")
    for m, deps in sorted(graph.items()):
        for d in sorted(deps - modules):
            problems.append(f"docs/architecture.md: {m} lists {d}, which is no folder")

    used = {m: set() for m in modules}
    dependents = {m: {n for n in graph if m in closure(graph, n)} for m in graph}
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        mine = module_of_dir(src, path.parent)
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            theirs = module_of_include(target, modules)
            if theirs is None or theirs == mine:
                continue
            where = path.relative_to(root)
            if is_test_code(path):
                if theirs in dependents.get(mine, ()):
                    problems.append(f"{where}: a test of {mine} includes {target}, but {theirs} "
                                    f"depends on {mine} (a cycle)")
                continue
            used[mine].add(theirs)
            if theirs not in graph.get(mine, ()):
                problems.append(f"{where}: includes {target}, but docs/architecture.md does not "
                                f"let {mine} use {theirs}")
    for m, deps in sorted(graph.items()):
        for d in sorted(deps - used.get(m, set())):
            if d in modules:
                problems.append(f"docs/architecture.md: {m} lists {d}, which its code does not "
                                f"include; remove it")
    cycle = find_cycle(graph)
    if cycle:
        problems.append("docs/architecture.md: a cycle: " + " -> ".join(cycle))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
