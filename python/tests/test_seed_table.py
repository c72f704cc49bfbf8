"""docs/seed-functions.md cannot drift: every Rust, C and Python name it
gives exists (in the crate's sources, the generated blob.h and the
installed package), and every function the NeoML and Caffe seed documents
declare has a row."""

import pathlib
import re

import pytest

import blobcore as bc

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "seed-functions.md"
SEEDS = ROOT.parent / "shared" / "seeds"

# Names the seeds' code uses that are not blob functions (assertion
# macros, C++ keywords, members of other classes).
NOT_FUNCTIONS = {"CHECK", "CHECK_LE", "CHECK_GE", "CHECK_LT", "CHECK_EQ", "DISABLE_COPY_AND_ASSIGN", "sizeof", "reset", "size", "gpu_shape"}


def rows():
    out = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        out.append(cells)
    return out


def names(cell):
    return re.findall(r"`([^`]+)`", cell)


def rust_sources():
    return "\n".join(p.read_text() for p in (ROOT / "blobcore" / "src").rglob("*.rs"))


def test_the_table_has_rows_for_all_four_seeds():
    r = rows()
    assert len(r) > 100
    for c in r:
        # A counterpart in every face, or "—" in all three.
        assert all(names(x) for x in c[1:]) or all(x == "—" for x in c[1:]), c


def test_every_rust_name_exists():
    src = rust_sources()
    missing = []
    for c in rows():
        for n in names(c[1]):
            fn = n.split("::")[-1]
            if not re.search(rf"pub (unsafe )?fn {re.escape(fn)}\b", src):
                missing.append(n)
    assert not missing, missing


def test_every_c_name_is_in_the_header():
    header = (ROOT / "include" / "blob.h").read_text()
    missing = [n for c in rows() for n in names(c[2]) if not re.search(rf"\b{re.escape(n)}\(", header)]
    assert not missing, missing


def test_every_python_name_resolves():
    missing = []
    for c in rows():
        for n in names(c[3]):
            head, _, attr = n.partition(".")
            owner = bc if head == "bc" else getattr(bc, head, None)
            if owner is None or not hasattr(owner, attr):
                missing.append(n)
    assert not missing, missing


@pytest.mark.parametrize("seed", ["neoml-cdnnblob.md", "caffe-blob-notes-1.txt", "caffe-blob-notes-2.md"])
def test_every_seed_function_has_a_row(seed):
    text = (SEEDS / seed).read_text()
    declared = set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\(", text))
    # Only the seed's own functions: its upper-case NeoML methods, or
    # Caffe's, which appear in code as method calls or declarations.
    if seed.startswith("neoml"):
        declared = {d for d in declared if d[0].isupper() and d != "CDnnBlob"}
    documented = {names(c[0])[0].split("(")[0].split(" ")[0] for c in rows()}
    missing = sorted(d for d in declared - NOT_FUNCTIONS - documented if not d.startswith("CDnn"))
    assert not missing, f"{seed} declares functions the table lacks: {missing}"
