#!/usr/bin/env python3
"""Fails when a make target (or .ci/run, or a CMake find_program) uses a tool
that scripts/deps.sh does not install.

Every program named in a command position of the Makefile's recipes (after
variable expansion), of .ci/run, and every CMake `find_program` must be one of:
a shell builtin or keyword, a program of Debian's essential base system, part
of the Rust toolchain, something the project builds itself (a path inside the
repository, .venv, build/, .tools), or a tool listed by `deps.sh --tools`.
Then each tool deps.sh lists must actually be on PATH, which holds after
`make deps` (so `make test` runs `deps` first).

Run: python3 scripts/check_deps.py   (exit 0 ok, 1 with one line per problem)
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHELL_WORDS = {
    "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until",
    "case", "esac", "function", "{", "}", "!", "[", "[[", "test", "cd", "echo", "printf",
    "exit", "return", "true", "false", "set", "export", "unset", "read", "local", "shift",
    "command", "type", "eval", "exec", "source", ".", ":", "trap", "wait", "mapfile",
}
# Programs of Debian's essential/required base (coreutils, sed, grep, mawk,
# findutils, debianutils, util-linux, bash, dpkg, apt) and of rustup.
BASE = {
    "rm", "mkdir", "install", "ln", "cp", "mv", "cat", "touch", "chmod", "head", "tail", "sort",
    "mktemp", "tee", "tr", "cut", "wc", "env", "id", "dirname", "basename", "readlink",
    "realpath", "uname", "nproc", "sleep", "seq", "xargs", "find", "sed", "grep", "awk",
    "bash", "sh", "which", "ldconfig", "ldd", "dpkg", "dpkg-query", "apt-get", "sudo", "timeout", "tar",
    "cargo", "rustc", "rustup",
    "cargo-fuzz",  # `make fuzz` installs it with cargo install
}
PROJECT_DIRS = ("build/", ".venv/", ".tools/", "target/", "scripts/", "venv-clean/", "REPO_ROOT/")


def deps_tools() -> dict[str, str]:
    out = subprocess.run(["bash", str(ROOT / "scripts/deps.sh"), "--tools"],
                         check=True, capture_output=True, text=True).stdout
    return {line.split()[0]: line.split()[2] for line in out.splitlines() if line.strip()}


def makefile_commands(text: str) -> list[tuple[str, str]]:
    """(where, shell text) for every recipe line, with make variables expanded."""
    text = text.replace("\\\n", " ")
    variables: dict[str, str] = {"CURDIR": "REPO_ROOT", "MAKE": "make", "CC": "cc", "CXX": "c++"}
    defines: dict[str, str] = {}
    recipes: list[tuple[str, str]] = []
    lines = text.split("\n")
    i, target = 0, "?"
    while i < len(lines):
        line = lines[i]
        m = re.match(r"define\s+(\w+)", line)
        if m:
            body = []
            i += 1
            while not lines[i].startswith("endef"):
                body.append(lines[i])
                i += 1
            defines[m.group(1)] = "\n".join(body)
        elif line.startswith("\t"):
            recipes.append((target, line[1:]))
        else:
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|=)\s*(.*)$", line)
            if m:
                name, op, value = m.groups()
                if "$(shell" in value:
                    recipes.append((name, value.replace("$(shell ", "").rstrip(")")))
                    value = "VALUE"  # make runs it once; the recipes see its output
                if op != "?=" or name not in variables:
                    variables[name] = value
            else:
                m = re.match(r"^([^\s:=#][^:=]*):", line)
                if m:
                    target = m.group(1).strip()
        i += 1

    def expand(s: str, depth: int = 0) -> str:
        if depth > 10:
            return s

        def call(m: re.Match[str]) -> str:
            name, args = m.group(1), m.group(2).split(",")
            body = defines.get(name, "")
            for k, a in enumerate(args, 1):
                body = body.replace(f"$({k})", a)
            return body

        s = re.sub(r"\$\(call (\w+),([^()]*(?:\([^()]*\)[^()]*)*)\)", call, s)
        # make's path functions run no program: their argument stands in.
        s = re.sub(r"\$\((?:abspath|realpath) ([^()]*(?:\([^()]*\)[^()]*)*)\)", r"\1", s)
        s = re.sub(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                   lambda m: variables.get(m.group(1), ""), s)
        return s if "$(" not in re.sub(r"\$\$\(", "", s) or depth > 9 else expand(s, depth + 1)

    return [(f"Makefile: {t}", expand(r.lstrip("@-+")).replace("$$", "$")) for t, r in recipes]


def command_words(shell: str) -> list[str]:
    """The words in command position of a shell text (builtins included)."""
    pieces = [shell]
    for quoted in re.findall(r'"(?:[^"\\]|\\.)*"', shell):  # $(...) inside double quotes
        pieces += re.findall(r"\$\(([^()]*)\)", quoted)
    words: list[str] = []
    for piece in pieces:
        lex = shlex.shlex(piece, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            tokens = list(lex)
        except ValueError:
            continue
        at_start, redirect = True, False
        for tok in tokens:
            if set(tok) <= set(";&|()<>"):
                if "<" in tok or ">" in tok:
                    redirect = True  # the next word is a file
                elif tok != ")":
                    at_start = True
                continue
            if redirect:
                redirect = False
                continue
            if at_start:
                tok = tok.lstrip("@")  # make's echo-off prefix, also inside $(call ...) bodies
                if tok.startswith("-"):
                    continue  # an option of `command`, `env`, ...
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tok):
                    continue  # VAR=value before the command
                if tok in {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}:
                    continue
                if tok.startswith("$") or not tok:
                    at_start = False
                    continue
                words.append(tok)
                at_start = tok in {"sudo", "env", "timeout", "exec", "command"}
    return words


def self_test() -> None:
    """The parser finds a tool in each place a recipe can run one."""
    mk = ("NINJA ?= ninja\nX := $(shell lsb_release -a)\ndefine g\n\t@if a; then $(1); fi\nendef\n"
          "t: dep\n\t@cd build && FOO=1 $(NINJA) -C x >/dev/null 2>&1 || gdb -q\n"
          "\t$(call g,meson setup,x)\n\techo \"$$(patchelf --version)\" | tee y\n")
    words = {w for _, r in makefile_commands(mk) for w in command_words(r)}
    expected = {"ninja", "gdb", "meson", "patchelf", "lsb_release"}
    assert expected <= words and not words & {"x", "1", "-C", "y", "build", "/dev/null"}, words


def main() -> int:
    self_test()
    tools = deps_tools()
    problems: list[str] = []
    sources = makefile_commands((ROOT / "Makefile").read_text())
    ci = (ROOT / ".ci/run").read_text()
    ci_lines = [line for line in ci.replace("\\\n", " ").splitlines()
                if not line.lstrip().startswith("#")]
    sources.append((".ci/run", ";".join(ci_lines)))
    seen: set[str] = set()
    for where, shell in sources:
        for word in command_words(shell):
            name = word
            if "/" in word:
                if word.startswith(PROJECT_DIRS) or not word.startswith("/"):
                    continue
                name = os.path.basename(word)
            if name in SHELL_WORDS or name in BASE or name in tools or (where, name) in seen:
                continue
            seen.add((where, name))
            problems.append(f"{where}: runs '{name}', which scripts/deps.sh does not install "
                            "(add it to TOOLS there, or to BASE here if Debian's base has it)")
    for cm in ROOT.rglob("CMakeLists.txt"):
        if any(p in cm.parts for p in ("target", "build", ".venv")):
            continue
        for m in re.finditer(r"find_program\(\s*\w+\s+(?:NAMES\s+)?([\w.+-]+)", cm.read_text()):
            if m.group(1) not in tools:
                problems.append(f"{cm.relative_to(ROOT)}: find_program({m.group(1)}) is not "
                                "installed by scripts/deps.sh")
    python = os.environ.get("PYTHON", "python3")
    for tool, package in tools.items():
        if shutil.which(python if tool == "python3" else tool) is None:
            problems.append(f"scripts/deps.sh lists '{tool}' (package {package}) but it is not "
                            "on PATH: run `make deps`")
    for p in problems:
        print(f"deps-check: {p}", file=sys.stderr)
    if not problems:
        print(f"deps-check: every tool the make targets use comes from scripts/deps.sh ({len(tools)} tools)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
