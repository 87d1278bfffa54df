#!/usr/bin/env python3
"""Writes a compile database of single files for clang-tidy.

Unity builds list only their unity sources (unity_N_cxx.cxx, each including
several .cc files) in compile_commands.json. For each .cc file named on the
command line this finds the unity source that includes it and writes an
entry with the same command compiling that file alone, with clang++ (the
commands of a GCC tree work for clang-tidy once the compiler is clang's).

usage: tidy_db.py BUILD_DIR OUT_DIR FILE...   (FILEs relative to the checkout)
Prints the files it has an entry for; those no target compiles are left out.
"""
import json
import os
import re
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, out = argv[1], argv[2]
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    wanted = {os.path.normpath(os.path.join(root, f)) for f in argv[3:]}
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    found = {}
    for entry in entries:
        unity = entry["file"]
        members = [unity]
        if re.search(r"unity_\d+_cxx\.cxx$", unity) and os.path.exists(unity):
            with open(unity) as f:
                members = [
                    os.path.normpath(os.path.join(os.path.dirname(unity), m))
                    for m in re.findall(r'#include "([^"]+\.cc)"', f.read())
                ]
        for member in members:
            if member in wanted and member not in found:
                command = entry["command"].replace(unity, member)
                command = re.sub(r"^\S*(c\+\+|g\+\+)\s", "clang++ ", command)
                found[member] = {"directory": entry["directory"], "command": command,
                                 "file": member}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "compile_commands.json"), "w") as f:
        json.dump(list(found.values()), f, indent=1)
    for member in sorted(found):
        print(os.path.relpath(member, root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
