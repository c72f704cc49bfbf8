"""Checks that shared objects load on every glibc from FLOOR on.

    python3 scripts/check_glibc_floor.py FLOOR FILE.so|FILE.whl ...

For each shared object (the extension modules inside a wheel included), the
dynamic symbols `objdump -T` lists must not need a glibc version newer than
FLOOR, and no undefined symbol may be unversioned and strong unless it is
CPython's (`Py*`, `_Py*`): an unversioned libc function (glibc's
`memfd_create` wrapper is 2.27) links against the build machine's glibc
yet fails to resolve at load time on an older one. Exits 1 naming what is
wrong.
"""

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def version(v):
    return tuple(int(x) for x in v.split("."))


def check(path, floor):
    out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True, check=True).stdout
    problems, newest = [], (0,)
    for line in out.splitlines():
        m = re.search(r"GLIBC_([0-9.]+)\)?\s+(\S+)$", line)
        if m:
            v = version(m.group(1))
            newest = max(newest, v)
            if v > floor:
                problems.append(f"{m.group(2)} needs GLIBC_{m.group(1)}")
            continue
        fields = line.split()
        if "*UND*" in fields and len(fields) >= 2:
            weak = fields[1] == "w"
            name = fields[-1]
            if not weak and not re.match(r"_?Py", name):
                problems.append(f"{name} is an unversioned undefined symbol")
    return problems, newest


def main():
    floor = version(sys.argv[1])
    failed = False
    for arg in sys.argv[2:]:
        files = [Path(arg)]
        tmp = None
        if arg.endswith(".whl"):
            tmp = tempfile.TemporaryDirectory()
            with zipfile.ZipFile(arg) as z:
                z.extractall(tmp.name)
            files = sorted(Path(tmp.name).rglob("*.so"))
        for f in files:
            problems, newest = check(f, floor)
            shown = "GLIBC_" + ".".join(map(str, newest))
            if problems:
                failed = True
                print(f"{arg}: {f.name}: needs more than glibc {sys.argv[1]}:")
                for p in problems[:20]:
                    print("  " + p)
            else:
                print(f"{arg}: {f.name}: loads on glibc >= {sys.argv[1]} (newest symbol version {shown})")
        if tmp:
            tmp.cleanup()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
