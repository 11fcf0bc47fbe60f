"""Checks that every plugin the build made exports exactly one symbol,
torchferry_plugin_entry: anything else visible could clash with torch or
another plugin in the same process.

Usage: check_exports.py NM BUILD_ROOT FOLDER...   (folders relative to
BUILD_ROOT, searched recursively for torchferry_*.so files)
"""
import pathlib
import subprocess
import sys

ENTRY = "torchferry_plugin_entry"
# Plugins that must export nothing at all (they test the missing entry).
NO_ENTRY = {"torchferry_noentry.so"}
# Plugins that must be found, so an empty search cannot pass.
REQUIRED = {"torchferry_example_c.so", "torchferry_good.so", "torchferry_compat_current.so"}


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def exported(nm, path):
    out = subprocess.run([nm, "-D", "--defined-only", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    nm, root, folders = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
    plugins = sorted(p for folder in folders
                     for p in (root / folder).rglob("torchferry_*.so")
                     if p.is_file() and is_elf(p))
    failures = []
    for path in plugins:
        symbols = exported(nm, path)
        expected = set() if path.name in NO_ENTRY else {ENTRY}
        if symbols != expected:
            failures.append(f"{path}: exports {sorted(symbols)}; expected "
                            f"{sorted(expected)}; build with "
                            f"-fvisibility=hidden and mark only the entry "
                            f"TF_PLUGIN_EXPORT")
    missing = REQUIRED - {p.name for p in plugins}
    if missing:
        failures.append(f"expected to check {sorted(missing)} under {root}, "
                        f"found {len(plugins)} plugins without them")
    for failure in failures:
        print(failure)
    print(f"checked {len(plugins)} plugins, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
