"""Every name the extension module defines has a stub in _blobcore.pyi
(and the stub names nothing the module lacks), so type checkers and IDEs
see the whole API."""

import ast
import pathlib

import blobcore
import blobcore._blobcore as ext

STUB = pathlib.Path(blobcore.__file__).with_name("_blobcore.pyi")
# Dunders users call through syntax or protocols, which the stubs must list.
PROTOCOL = {
    "__getitem__", "__setitem__", "__iter__", "__len__", "__array__", "__dlpack__",
    "__dlpack_device__", "__copy__", "__deepcopy__", "__enter__", "__exit__", "__buffer__",
}


def stubbed():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            members[node.name] = names
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return top, members


def test_every_module_name_has_a_stub():
    top, _ = stubbed()
    defined = {n for n in dir(ext) if not n.startswith("__")}
    assert defined - top == set()
    # Stub-only helpers (type aliases) are allowed; classes and functions must exist.
    tree = ast.parse(STUB.read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert declared - defined == set()


def test_every_method_has_a_stub():
    _, members = stubbed()
    for cls in [ext.Blob, ext.Engine, ext.TensorDesc, ext.BlockingDesc, ext._BufferContext]:
        public = {n for n in vars(cls) if not n.startswith("_") or n in PROTOCOL}
        missing = public - members[cls.__name__]
        assert missing == set(), (cls.__name__, missing)
        extra = {n for n in members[cls.__name__] if not n.startswith("_")} - set(dir(cls))
        assert extra == set(), (cls.__name__, extra)
