"""Where the installed plugin SDK lives, for a vendor's build.

    python -m torchferry config --cflags        # -I<include dir> -fvisibility=hidden
    python -m torchferry config --cmake-dir     # -Dtorchferry_DIR=... for find_package(torchferry)
    python -m torchferry config --pkgconfig-dir # a folder for PKG_CONFIG_PATH (torchferry.pc)

A plugin includes `torchferry.h` and links nothing of torchferry's, so a
header folder and hidden visibility are all a build needs. The paths are the
package's own folders (meson installs the SDK inside it, sdk/meson.build).
"""

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def include_dir():
    """The folder holding torchferry.h."""
    return os.path.join(_PACKAGE_DIR, "include")


def plugin_dir():
    """The package's own plugin folder (cpu, cuda, aten, example_c)."""
    return os.path.join(_PACKAGE_DIR, "plugins")


def cmake_dir():
    """The folder holding torchferryConfig.cmake (torchferry_DIR)."""
    return os.path.join(_PACKAGE_DIR, "share", "cmake", "torchferry")


def pkgconfig_dir():
    """The folder holding torchferry.pc (for PKG_CONFIG_PATH)."""
    return os.path.join(_PACKAGE_DIR, "share", "pkgconfig")


def abi_doc():
    """ABI.md, the rules of the contract the header states."""
    return os.path.join(_PACKAGE_DIR, "share", "torchferry", "ABI.md")


def cflags():
    """The compiler flags a plugin needs: the header's folder, hidden visibility."""
    return f"-I{include_dir()} -fvisibility=hidden"


# `python -m torchferry config --X` prints ANSWERS[X]().
ANSWERS = {
    "cflags": cflags,
    "include_dir": include_dir,
    "plugin_dir": plugin_dir,
    "cmake_dir": cmake_dir,
    "pkgconfig_dir": pkgconfig_dir,
}


def main(args):
    """Prints each answer asked for, one a line, in the order of ANSWERS; with
    none asked, every answer with its name. Non-zero when the SDK is missing
    (a package built without it, or run from the source tree)."""
    asked = [name for name in ANSWERS if getattr(args, name)]
    header = os.path.join(include_dir(), "torchferry.h")
    if not os.path.isfile(header):
        print(
            f"torchferry config: expected the SDK header at {header}, found none; "
            "this torchferry was not installed from its wheel (pip install torchferry)",
            file=sys.stderr,
        )
        return 1
    if not asked:
        for name, answer in ANSWERS.items():
            print(f"{name.replace('_', '-')}: {answer()}")
        return 0
    for name in asked:
        print(ANSWERS[name]())
    return 0
