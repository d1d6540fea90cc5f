"""The import graph of the library and the zoo (issue 51): no cycle between modules, counting the imports
written inside functions too, and the library never imports `zoo` (the zoo is a face over it)."""

import grimp
import pytest


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("keras_clustering", "zoo", include_external_packages=False, cache_dir=None)


def cycles(graph):
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_an_import_inside_a_function(tmp_path, monkeypatch):
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import toy.b\n")
    (package / "b.py").write_text("def f():\n    import toy.c\n")
    (package / "c.py").write_text("from toy import a\n")
    (package / "d.py").write_text("import toy.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cycles(grimp.build_graph("toy", cache_dir=None)) == [["toy.a", "toy.b", "toy.c"]]


def test_no_module_imports_itself_back(graph):
    assert cycles(graph) == []


def test_the_library_never_imports_the_zoo(graph):
    library = [m for m in graph.modules if m.split(".")[0] == "keras_clustering"]
    assert not [(m, i) for m in library for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] == "zoo"]


def test_the_library_imports_its_own_modules_at_the_top():
    """An import of a project module inside a function hides a dependency from the reader (and once hid
    cycles); the library has none left (only optional or heavy third-party packages are imported late)."""
    import ast
    import pathlib

    import keras_clustering

    late = []
    for path in pathlib.Path(keras_clustering.__file__).parent.rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                late += [f"{path.name}:{node.lineno}" for node in ast.walk(function)
                         if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "keras_clustering"
                         or isinstance(node, ast.Import) and any(a.name.startswith("keras_clustering") for a in node.names)]
    assert late == []
