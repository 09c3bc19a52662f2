#!/usr/bin/env python3
"""No file over 600 lines in the project's own code (C, C++, CUDA and Python, tests too), and no
function over 80 lines in library code (DESIGN.md; issue 50): common/, transport/,
collectives/, tensorfusion/ and trainer/ (its programs' main files and command line,
options.cc, aside: a usage text is one string). A function is a
definition whose header starts in column 0 and whose body ends with a `}` in column 0, as
.clang-format lays them out (namespaces are not indented). The functions that were longer when
the rule became a test are listed below with the length they had: they may only shrink, and a
function that comes under the limit must leave the list. Exit 1 with each breach named."""
import os
import re
import sys

LIMIT = 80
DIRS = ("common", "transport", "collectives", "tensorfusion", "trainer")
FILE_LIMIT = 600
CODE_DIRS = DIRS + ("include", "tools", "perf", "fuzz", "python", "tests", "scripts", "examples", "cmake")
CODE = (".cc", ".h", ".c", ".cu", ".cuh", ".hpp", ".py")


def long_files(root):
    """Each file of the project's code over FILE_LIMIT lines, as a breach."""
    out = []
    for d in CODE_DIRS:
        for base, dirs, names in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for n in sorted(names):
                if n.endswith(CODE):
                    path = os.path.join(base, n)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        count = sum(1 for _ in f)
                    if count > FILE_LIMIT:
                        out.append(f"{os.path.relpath(path, root)} is {count} lines; split it (at most {FILE_LIMIT})")
    return out
# Still to split (issue 50): file, the function's header's start, its length then.
KNOWN = {}
HEADER = re.compile(r"^[A-Za-z_][^;{}()]*\(")  # a return type and name, then the parameters


def functions(path):
    """(header, first line, length) of each function defined at column 0."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, start = [], None
    for i, line in enumerate(lines):
        if start is None:
            if HEADER.match(line) and not line.startswith(("namespace", "extern", "using", "template", "#", "class ",
                                                          "struct ", "enum ", "union ")):
                j = i  # the header may continue over a few lines up to its `{`
                while j < len(lines) and j < i + 6 and not lines[j].rstrip().endswith(("{", ";", "}")):
                    j += 1
                if j < len(lines) and lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith("= {"):
                    start = i
        elif line.startswith("}"):
            out.append((lines[start].rstrip("{ "), start + 1, i - start + 1))
            start = None
    return out


def main(root):
    breaches, seen = long_files(root), set()
    for d in DIRS:
        for base, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if not n.endswith((".cc", ".cu", ".c")) or n.endswith("_main.cc") or n == "options.cc":
                    continue
                path = os.path.join(base, n)
                rel = os.path.relpath(path, root)
                for header, line, length in functions(path):
                    key = next((k for k in KNOWN if k[0] == rel and header.startswith(k[1])), None)
                    if key:
                        seen.add(key)
                        if length > KNOWN[key]:
                            breaches.append(f"{rel}:{line}: {header} grew to {length} lines (was {KNOWN[key]}; "
                                            f"the limit is {LIMIT})")
                        elif length <= LIMIT:
                            breaches.append(f"{rel}:{line}: {header} is {length} lines now: take it off the list "
                                            "in tests/check_function_length.py")
                    elif length > LIMIT:
                        breaches.append(f"{rel}:{line}: {header} is {length} lines; split it (at most {LIMIT})")
    for key in set(KNOWN) - seen:
        breaches.append(f"{key[0]}: no function '{key[1]}' any more: take it off the list in "
                        "tests/check_function_length.py")
    for b in breaches:
        print(f"check_function_length: {b}")
    if not breaches:
        listed = f" (but {len(KNOWN)} listed to split)" if KNOWN else ""
        print(f"check_function_length: no file over {FILE_LIMIT} lines; no function over {LIMIT} lines in "
              f"{', '.join(DIRS)}{listed}")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
