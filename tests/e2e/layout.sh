#!/usr/bin/env bash
# The layout holds (README "Layout"): each folder of cli/ includes only the folders
# below it (cmd -> backend -> kube, render, oci -> project, net -> base), runtime/
# includes nothing of cli/, and no source file under cli/ or runtime/ is longer than
# 800 lines (split by what it holds, not cut at a count).
set -euo pipefail
cd "${KTRAIN_SOURCE:-.}"
python3 - <<'PY'
import os, re, sys

# Which folders each folder of cli/ may include, besides itself.
allowed = {
    "base": set(),
    "project": {"base"},
    "net": {"base"},
    "render": {"base", "project"},
    "kube": {"base", "net", "project", "render"},
    "oci": {"base", "net", "project"},
    "backend": {"base", "net", "project", "render", "kube", "oci"},
    "cmd": {"base", "net", "project", "render", "kube", "oci", "backend"},
    "main.cc": {"base", "cmd"},
}
cli_folders = set(allowed) - {"main.cc"}
include = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/', re.M)
problems, files, longest = [], 0, (0, "")
for top in ("cli", "runtime"):
    for root, _, names in os.walk(top):
        for name in sorted(names):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(root, name)
            text = open(path, encoding="utf-8").read()
            files += 1
            lines = text.count("\n")
            longest = max(longest, (lines, path))
            if lines > 800:
                problems.append(f"{path}: {lines} lines (at most 800: split it by what it holds)")
            parts = path.split("/")
            if top == "runtime":
                for m in include.finditer(text):
                    if m.group(1) in cli_folders:
                        problems.append(f"{path}: includes {m.group(1)}/ of cli/ (runtime/ stands alone)")
                continue
            folder = parts[1]
            if folder not in allowed:
                problems.append(f"{path}: cli/{folder}/ is not in this test's table of layers")
                continue
            for m in include.finditer(text):
                dst = m.group(1)
                if dst == folder or dst not in cli_folders:
                    continue
                if dst not in allowed[folder]:
                    problems.append(f"{path}: includes {dst}/, which {folder}/ may not (an include up the layers)")
if files < 100:
    sys.exit(f"FAIL: only {files} sources found under cli/ and runtime/")
for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"ok: {files} sources keep to the layers; the longest is {longest[1]} ({longest[0]} lines)")
PY
