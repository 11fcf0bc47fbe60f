"""Finds the torch of the Python that runs this script, without importing it.

Importing torch takes seconds and loads every backend library; the build only
needs to know where the wheel lies and how its C++ is to be compiled. Prints
`root=<torch package folder>`, `cxx11_abi=<0|1>` and `cxx_std=<17|20|...>` (the standard torch's build
config asks for),
one a line; exits 1 with the reason on stderr when torch is not installed or
its layout is not a wheel's.
"""

import importlib.util
import pathlib
import re
import sys


def cxx_standard(root: pathlib.Path) -> int:
    """The C++ standard torch's build config asks of code that includes its
    headers: a hint, which the build confirms by compiling torch's headers.

    TorchConfig.cmake sets it on the torch target, as `CXX_STANDARD 20`
    (torch 2.13, 2.14) or as a compile feature, `cxx_std_20` (torch 2.15);
    17 where it says nothing.
    """
    config = root / "share" / "cmake" / "Torch" / "TorchConfig.cmake"
    if config.exists():
        found = re.findall(r"CXX_STANDARD\s+(\d+)|cxx_std_(\d+)", config.read_text())
        asks = [int(a or b) for a, b in found]
        if asks:
            return max(asks)
    return 17


def main() -> int:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        print(f"torch is not installed for {sys.executable}", file=sys.stderr)
        return 1
    root = pathlib.Path(list(spec.submodule_search_locations)[0])
    needed = [
        root / "version.py",
        root / "include" / "ATen" / "core" / "Tensor.h",
        root / "lib" / "libc10.so",
        root / "lib" / "libtorch_cpu.so",
    ]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        print(f"torch at {root} lacks {', '.join(missing)}: expected a wheel "
              "with C++ headers and libraries", file=sys.stderr)
        return 1
    # Wheels record their _GLIBCXX_USE_CXX11_ABI only inside torch._C, which
    # needs the import this script avoids. The mangled names tell it as well:
    # c10's assertion helper takes a std::string, spelled
    # std::__cxx11::basic_string under the new ABI and `Ss` under the old
    # (torch <= 2.5's wheels). Any mention of std::__cxx11 is no proof: an
    # old-ABI libc10 still exports a few symbols that name it.
    c10 = (root / "lib" / "libc10.so").read_bytes()
    cxx11_abi = int(b"torchInternalAssertFailEPKcS2_jS2_RKSs" not in c10)
    print(f"root={root}")
    print(f"cxx11_abi={cxx11_abi}")
    print(f"cxx_std={cxx_standard(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
