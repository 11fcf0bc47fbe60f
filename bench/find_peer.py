"""Prints the build paths of a benchmark peer, one per line, for meson; exits
1 (with the reason on stderr) when the peer does not import in this Python.

    find_peer.py nanobind -> include dir, source dir, robin_map include dir
    find_peer.py tvm_ffi  -> include dir, library dir
"""

import os
import sys


def nanobind_paths():
    import nanobind

    root = os.path.dirname(nanobind.__file__)
    return [
        nanobind.include_dir(),
        nanobind.source_dir(),
        os.path.join(root, "ext", "robin_map", "include"),
    ]


def tvm_ffi_paths():
    from tvm_ffi import libinfo

    return [libinfo.find_include_path(), os.path.dirname(libinfo.find_libtvm_ffi())]


def main(which):
    try:
        paths = {"nanobind": nanobind_paths, "tvm_ffi": tvm_ffi_paths}[which]()
    except Exception as e:  # any failure only means: build without this peer
        print(f"{which}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
