#!/usr/bin/env python3
"""Checks that the headers installed under INCLUDE_DIR are exactly the public closure: the
graph API (graph/*.h), the shared facet types (stages/facets/*.h) and every project header they
include, transitively (quoted includes). A header reached but not installed, or installed but
not reached, is reported; exit status 1 then."""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    installed = {str(p.relative_to(root)) for p in root.rglob("*.h")}
    roots = {h for h in installed if re.fullmatch(r"(graph|stages/facets)/[^/]+\.h", h)}
    reached, todo, missing = set(), sorted(roots), []
    while todo:
        header = todo.pop()
        if header in reached:
            continue
        reached.add(header)
        if header not in installed:
            continue
        for inc in INCLUDE.findall((root / header).read_text()):
            if inc not in installed:
                missing.append(f"{inc} (included by {header})")
            todo.append(inc)
    extra = sorted(installed - reached)
    for m in missing:
        print(f"not installed but included: {m}")
    for e in extra:
        print(f"installed but not needed by the public headers: {e}")
    print(f"{len(installed)} headers installed, {len(roots)} roots")
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
