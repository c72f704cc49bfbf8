#!/usr/bin/env bash
# blobcore's system dependencies: the one place that knows them.
#
#   scripts/deps.sh [GROUP...]   install what GROUPs need and is missing (default: all)
#   scripts/deps.sh --check [GROUP...]
#                                only report: exit 1 naming what is missing
#   scripts/deps.sh --tools      print "tool group package" for every tool the
#                                make targets run (read by scripts/check_deps.py)
#   scripts/deps.sh --packages [GROUP...]
#                                print the Debian packages of GROUPs
#
# Groups, and the make targets that ask for them:
#   build   a C toolchain for cargo's linker and build scripts (every target)
#   c       cmake/ctest for the C and C++ examples (demo, test, bench-c)
#   test    valgrind for the memcheck pass, DLPack's header for its C test (test)
#   gpu     Vulkan loader + Mesa's lavapipe, a software GPU (test)
#   python  Python >= 3.11 with venv and pip (demo, test, wheel, bench-py)
#
# On a Debian-like system it installs what is missing with apt-get when run
# as root, with `sudo -n` when that works without a password, and otherwise
# stops with the one command an administrator has to run. Elsewhere it says
# in words what to install. Nothing is installed when nothing is missing.
set -euo pipefail

PYTHON=${PYTHON:-python3}
ALL_GROUPS=(build c test gpu python)

# tool  group  Debian package: every program a make target runs that does
# not come with a Rust toolchain or a base Debian system.
TOOLS=(
    "cc build build-essential"
    "c++ build build-essential"
    "make build build-essential"
    "objdump build build-essential"
    "pkg-config build pkg-config"
    "cmake c cmake"
    "ctest c cmake"
    "valgrind test valgrind"
    "python3 python python3"
)

packages_of() {
    case "$1" in
        build) echo "build-essential pkg-config" ;;
        c) echo "cmake" ;;
        test) echo "valgrind libdlpack-dev" ;;
        gpu) echo "libvulkan1 mesa-vulkan-drivers" ;;
        python) echo "python3 python3-venv python3-pip python3-dev" ;;
        *) echo "deps.sh: unknown group '$1' (groups: ${ALL_GROUPS[*]})" >&2; exit 2 ;;
    esac
}

# What each group needs, in words, for systems without dpkg/apt-get.
words_of() {
    case "$1" in
        build) echo "a C and C++ compiler with make (cc, c++, make) and pkg-config" ;;
        c) echo "CMake >= 3.16 (cmake, ctest)" ;;
        test) echo "valgrind and DLPack's C header (dlpack/dlpack.h)" ;;
        gpu) echo "a Vulkan loader (libvulkan.so.1) and a Vulkan driver; Mesa's lavapipe (software) is enough" ;;
        python) echo "Python >= 3.11 with the venv and ensurepip modules and pip (set PYTHON=... to pick one)" ;;
    esac
}

python_ok() {
    "$PYTHON" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

installed() {  # a Debian package in state "install ok installed" (not just config files left)
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# A group is satisfied on any system when its tools run; on Debian its
# packages must also be installed (the GPU group has no tool to run).
group_tools_ok() {
    local g=$1 line tool group
    for line in "${TOOLS[@]}"; do
        read -r tool group _ <<<"$line"
        [ "$group" = "$g" ] || continue
        [ "$tool" = python3 ] && tool=$PYTHON
        command -v "$tool" >/dev/null 2>&1 || return 1
    done
    if [ "$g" = python ]; then python_ok || return 1; fi
    if [ "$g" = gpu ] && ! debian_like; then
        ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1' || return 1
    fi
    return 0
}

debian_like() { command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; }

missing_packages() {  # the Debian packages of the given groups that are not installed
    local g p
    for g in "$@"; do
        if [ "$g" = python ] && python_ok; then continue; fi  # a usable Python needs no packages
        for p in $(packages_of "$g"); do installed "$p" || echo "$p"; done
    done | awk '!seen[$0]++'
}

check_only=0
case "${1:-}" in
    --tools) printf '%s\n' "${TOOLS[@]}"; exit 0 ;;
    --packages) shift; for g in "${@:-${ALL_GROUPS[@]}}"; do packages_of "$g"; done | tr ' ' '\n' | awk '!seen[$0]++'; exit 0 ;;
    --check) check_only=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
esac
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=("${ALL_GROUPS[@]}")
for g in "${groups[@]}"; do packages_of "$g" >/dev/null; done

if ! debian_like; then
    bad=()
    for g in "${groups[@]}"; do group_tools_ok "$g" || bad+=("$g"); done
    [ ${#bad[@]} -eq 0 ] && exit 0
    echo "blobcore: this system has no apt-get/dpkg, so deps.sh cannot install what is missing. Please install:" >&2
    for g in "${bad[@]}"; do echo "  - $(words_of "$g")" >&2; done
    exit 1
fi

mapfile -t need < <(missing_packages "${groups[@]}")
if [ ${#need[@]} -gt 0 ]; then
    cmd="apt-get update && apt-get install -y --no-install-recommends ${need[*]}"
    if [ $check_only -eq 1 ]; then
        echo "blobcore: missing system packages: ${need[*]} (run: sudo sh -c '$cmd')" >&2
        exit 1
    fi
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        sudo=(sudo -n)
    else
        echo "blobcore: missing system packages; ask an administrator to run: sudo sh -c '$cmd'" >&2
        exit 1
    fi
    echo "deps.sh: installing ${need[*]}"
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# What was asked for must now work; say plainly what does not.
for g in "${groups[@]}"; do
    if ! group_tools_ok "$g"; then
        if [ "$g" = python ]; then
            echo "blobcore: $PYTHON is not Python >= 3.11 with venv and ensurepip; install Debian's python3-venv for /usr/bin/python3, or run make with PYTHON=/path/to/python3.11+" >&2
        else
            echo "blobcore: after installing, still missing: $(words_of "$g")" >&2
        fi
        exit 1
    fi
done
