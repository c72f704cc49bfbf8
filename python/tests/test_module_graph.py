"""The binding crate's modules depend only downward (issue 29): no module
of python/src reaches, through `crate::` paths, a module that reaches it
back. The core crate's structure, kept in the binding."""

import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


def graph():
    mods = {p.stem: p.read_text() for p in SRC.glob("*.rs") if p.stem != "lib"}
    return {m: set(re.findall(r"crate::([a-z_]+)", text)) & set(mods) - {m} for m, text in mods.items()}


def find_circle(g):
    """A list of modules forming a circle, or None."""
    done, path = set(), []

    def visit(m):
        if m in path:
            return path[path.index(m):] + [m]
        if m in done:
            return None
        path.append(m)
        for d in sorted(g[m]):
            c = visit(d)
            if c:
                return c
        path.pop()
        done.add(m)
        return None

    for m in sorted(g):
        c = visit(m)
        if c:
            return c
    return None


def test_python_crate_modules_have_no_import_circles():
    g = graph()
    assert len(g) >= 10 and g["blob"] >= {"arrays", "handle", "engine"}
    circle = find_circle(g)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_check_finds_a_circle():
    g = graph()
    g["errors"] = g["errors"] | {"blob"}  # blob reaches errors: now a circle
    assert find_circle(g) is not None
