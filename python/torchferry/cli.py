"""The command line: `python -m torchferry {info,bench,config,check,build-aten}`."""

import argparse
import sys

from . import environment
from .user_error import UserError


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


_positive_int.__name__ = "positive integer"


def _positive_seconds(text):
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(text)
    return value


_positive_seconds.__name__ = "positive number of seconds"


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m torchferry",
        description="torchferry hands torch tensors to native kernels in versioned "
        f"plugins. Environment: {environment.help_text()}. "
        "Installed distributions add plugins through the 'torchferry.plugins' entry point group.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser(
        "info", help="torch version, bridge path and why, plugins, kernels and skipped plugins"
    )
    info.add_argument("--json", action="store_true", help="print JSON (everything) instead of text")
    info.add_argument(
        "--verbose",
        action="store_true",
        help="also the bridge's calibration and probes, what each path costs per tensor (measured "
        "now, in a few milliseconds), every kernel and every shadowed kernel",
    )
    bench = sub.add_parser(
        "bench", help="measure torchferry against its peers in one process, side by side"
    )
    bench.add_argument("--quick", action="store_true", help="a smoke run in under a minute")
    bench.add_argument(
        "--device", choices=["cpu", "cuda"], default="cpu", help="where the tensors live"
    )
    bench.add_argument(
        "--sections",
        default="all",
        help="comma-separated sections to run: bridge,view,call,ops,aten,loader,llama,threads "
        "(default all)",
    )
    bench.add_argument(
        "--max-threads",
        metavar="N",
        type=_positive_int,
        help="the threads section sweeps torch's (and the CPU plugin's) thread count from 1 to N "
        "(default: the cores this process may run on)",
    )
    bench.add_argument("--json", metavar="PATH", help="write the results JSON here")
    bench.add_argument("--plot", metavar="PATH", help="write the PNG chart here")
    bench.add_argument(
        "--out-dir",
        metavar="DIR",
        default="bench-results",
        help="where the JSON and PNG go unless --json/--plot say otherwise "
        "(default ./bench-results)",
    )
    config = sub.add_parser(
        "config",
        help="where the plugin SDK is: header, CMake package, pkg-config file, plugin folder",
        description="Print what a plugin build needs, one answer a line in this order; "
        "with no option, every answer with its name.",
    )
    config.add_argument(
        "--cflags", action="store_true", help="-I<include dir> -fvisibility=hidden"
    )
    config.add_argument(
        "--include-dir", action="store_true", help="the folder holding torchferry.h"
    )
    config.add_argument(
        "--plugin-dir", action="store_true", help="the package's own plugin folder"
    )
    config.add_argument(
        "--cmake-dir",
        action="store_true",
        help="torchferry_DIR for find_package(torchferry) (target torchferry::plugin)",
    )
    config.add_argument(
        "--pkgconfig-dir",
        action="store_true",
        help="the folder of torchferry.pc, for PKG_CONFIG_PATH",
    )
    check = sub.add_parser(
        "check",
        help="run a plugin's kernels against torch's results over generated cases (the conformance kit)",
        description="Load PLUGIN alone, as the loader does, and call every kernel it registers on "
        "generated cases (each dtype it claims; contiguous, transposed, sliced with an offset, "
        "broadcast, empty, 0-dim, aliased, odd and large sizes, special values), comparing each "
        "result with the op's reference: torch's computation for a built-in op, --reference for an op "
        "the plugin declares. Prints a table op x dtype x case kind; exits 1 when a case fails, a "
        "kernel crashes or hangs, or the loader refuses the plugin.",
    )
    check.add_argument("plugin", metavar="PLUGIN", help="a plugin file, or the name of a plugin the loader finds")
    check.add_argument("--ops", metavar="OP,...", help="only these ops (default: every op the plugin serves)")
    check.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="the kernels' device (default cpu)")
    check.add_argument("--dtypes", metavar="DTYPE,...", help="only these dtypes (e.g. float32,int8)")
    check.add_argument("--cases", metavar="KIND,...", help="only these case kinds (default: all)")
    check.add_argument("--seed", type=int, default=0, help="the seed every case's values derive from (default 0)")
    check.add_argument(
        "--reference",
        action="append",
        metavar="[OP=]MODULE:FUNCTION",
        help="the reference of a declared op (repeatable; without OP= it serves every declared op)",
    )
    check.add_argument("--json", metavar="PATH", help="write the full report as JSON here")
    check.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=120.0,
        help="seconds a case may run before its kernel counts as hung (default 120)",
    )
    build_aten = sub.add_parser(
        "build-aten",
        help="build the ATen fallback plugin for the torch this Python runs",
        description="Compile the ATen fallback plugin, whose sources the package carries, against "
        "the C++ headers and libraries of the torch this Python imports, with the system's C++ "
        "compiler ($CXX, else c++). By default it goes to a per-user folder that torchferry "
        "searches under that torch, after the package's own plugins: "
        "$TORCHFERRY_CACHE/aten/torch-<version>/ (TORCHFERRY_CACHE defaults to "
        "$XDG_CACHE_HOME/torchferry, else ~/.cache/torchferry).",
    )
    build_aten.add_argument("--out", metavar="DIR", help="write the plugin here instead")
    build_aten.add_argument(
        "--jobs", type=_positive_int, metavar="N", help="files compiled at once (default: the CPU count)"
    )
    return parser


# The commands that answer without the bridge; the others need it started.
_WITHOUT_BRIDGE = ("info", "config", "build-aten")


def main(argv=None):
    args = build_parser().parse_args(argv)
    import torchferry

    try:
        if torchferry.STARTUP_ERROR is not None and args.command not in _WITHOUT_BRIDGE:
            raise UserError(torchferry.STARTUP_ERROR)
        return _run(args)
    except UserError as error:
        # One line, whatever the message holds: a path may hold a newline.
        text = " ".join(str(error).split("\n"))
        print(f"python -m torchferry {args.command}: {text}", file=sys.stderr)
        return 2


def _run(args):
    if args.command == "info":
        from . import info

        return info.main(as_json=args.json, verbose=args.verbose)
    if args.command == "bench":
        from .bench import run

        return run.main(args)
    if args.command == "config":
        from . import config

        return config.main(args)
    if args.command == "check":
        from . import check

        return check.main(args)
    if args.command == "build-aten":
        from . import aten_build

        return aten_build.main(args)
    return 2
