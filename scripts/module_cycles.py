#!/usr/bin/env python3
"""module_cycles.py — finds circles between the files of the given source folders and draws their
graph. A node is a file stem (src/engine/engine = engine.c + engine.h; cuda/marlin = marlin.cu +
marlin.h); A -> B when A's object calls or reads a symbol B's object defines (nm on the built
objects), or when one of A's files includes B's header (looked up beside the including file
first, as cuda/ does, then under src/). A circle is a set of nodes that reach one another; each
is printed with the edges that close it (the symbol or the include line), and the exit status is
1 when there is one. With --folders a node is a folder (src/model, cuda) and an edge is any
file edge between two folders, so a circle between layers shows even where no two files form one.

  scripts/module_cycles.py BUILD src/engine src/server          # check (exit 1 on a circle)
  scripts/module_cycles.py --folders BUILD src/* cuda            # the same between folders
  scripts/module_cycles.py --edges BUILD src/engine              # print the graph, one edge a line

Compilers and linkers report neither (a C include guard hides an include circle, and a static
library links a call circle), hence this script; nm comes with binutils, which the build needs.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stem(path):
    return os.path.splitext(os.path.normpath(path))[0]


def source_files(folders):
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h", ".cu", ".cuh")):
                yield os.path.join(folder, name)


def object_symbols(build, nodes):
    """{node: (defined, used)} global symbols of each node's object (two empty sets when it has
    none), read with one nm over all the objects: a process per object is most of the run."""
    objects = {os.path.join(build, n + ".o"): n for n in nodes}
    found = [o for o in objects if os.path.exists(o)]
    symbols = {n: (set(), set()) for n in nodes}
    if not found:
        return symbols
    out = subprocess.run(["nm", "-A"] + found, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        obj, _, rest = line.partition(".o:")
        node = objects.get(obj + ".o")
        parts = rest.split()
        if node is None:
            continue
        defined, used = symbols[node]
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWG":
            defined.add(parts[2])
    return symbols


def build_graph(build, folders):
    """{node: {target: why}} over the nodes of folders."""
    files = list(source_files(folders))
    nodes = sorted({stem(f) for f in files})
    graph = {n: {} for n in nodes}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for inc in INCLUDE.findall(fh.read()):
                beside = os.path.join(os.path.dirname(f), inc)
                target = stem(beside if os.path.exists(beside) else os.path.join("src", inc))
                if target in graph and target != stem(f):
                    graph[stem(f)].setdefault(target, "%s includes %s" % (f, inc))
    symbols = object_symbols(build, nodes)
    owner = {}
    for n, (defined, _) in symbols.items():
        for sym in defined:
            owner[sym] = n
    for n, (_, used) in symbols.items():
        for sym in sorted(used):
            target = owner.get(sym)
            if target and target != n:
                graph[n].setdefault(target, "%s.o uses %s" % (n, sym))
    return graph


def folder_graph(graph):
    """The file graph with each node replaced by its folder; edges inside a folder drop out."""
    folders = {}
    for v, targets in graph.items():
        fv = os.path.dirname(v)
        folders.setdefault(fv, {})
        for w, why in targets.items():
            fw = os.path.dirname(w)
            folders.setdefault(fw, {})
            if fw != fv:
                folders[fv].setdefault(fw, "%s -> %s: %s" % (v, w, why))
    return folders


def circles(graph):
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def one_cycle(graph, comp):
    """A concrete path around comp: breadth-first from its first node back to it."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in graph[v]:
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main(argv):
    edges_only = by_folder = False
    while argv[:1] in (["--edges"], ["--folders"]):
        edges_only |= argv[0] == "--edges"
        by_folder |= argv[0] == "--folders"
        argv = argv[1:]
    if len(argv) < 2:
        sys.exit(__doc__)
    build, folders = argv[0], argv[1:]
    graph = build_graph(build, folders)
    if by_folder:
        graph = folder_graph(graph)
    if edges_only:
        for v in graph:
            for w, why in sorted(graph[v].items()):
                print("%s -> %s  (%s)" % (v, w, why))
        return 0
    found = circles(graph)
    for comp in found:
        path = one_cycle(graph, comp)
        print("circle: " + " -> ".join(path))
        for a, b in zip(path, path[1:]):
            print("    %s -> %s: %s" % (a, b, graph[a][b]))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
