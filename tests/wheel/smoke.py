"""A user's first minutes with the wheel, in a venv that holds torch and the
wheel and nothing else: import, the plugins it brought, ops against torch's
results, `info`, and the SDK it carries.

    python smoke.py [--expect-aten DIR]

Without --expect-aten the wheel must hold no ATen plugin (it is built
without torch) and load the CPU plugin from its own folder. With it, the
ATen plugin must load from DIR (where `python -m torchferry build-aten`
put it) and compute under this torch. Run from outside the checkout, so
that nothing of the source tree is imported by accident.
"""

import argparse
import os
import subprocess
import sys

import torch

import torchferry
from torchferry import ops, plugins


def fail(message):
    print(f"smoke: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect-aten", metavar="DIR")
    args = parser.parse_args()

    site = os.path.dirname(os.path.dirname(torch.__file__))
    check(os.path.dirname(os.path.dirname(torchferry.__file__)) == site,
          f"torchferry imported from {torchferry.__file__}, not beside torch in {site}")
    print(f"torch {torch.__version__}, torchferry {torchferry.__version__} from {torchferry.__file__}")
    print(f"bridge path: {torchferry.bridge.info()['path']}")

    loaded = {p["name"]: p for p in plugins.loaded()}
    listing = ", ".join(f"{name} ({p['path']})" for name, p in sorted(loaded.items()))
    print(f"plugins: {listing}")
    check("cpu" in loaded, f"the cpu plugin did not load; skipped: {plugins.skipped()}")
    check(os.path.dirname(loaded["cpu"]["path"]) == torchferry.PLUGIN_DIR,
          f"the cpu plugin came from {loaded['cpu']['path']}, not the package")
    packaged = os.listdir(torchferry.PLUGIN_DIR)
    check("torchferry_aten.so" not in packaged,
          f"the wheel holds an ATen plugin, built for some torch: {packaged}")

    x = torch.randn(4, 7)
    y = torch.randn(4, 7)
    torch.testing.assert_close(ops.add(x, y), x + y, rtol=0, atol=0)
    out = torch.empty(4, 7)
    check(ops.mul(x, y, out=out) is out, "out= did not return its tensor")
    torch.testing.assert_close(out, x * y, rtol=0, atol=0)
    w = torch.randn(5, 7)
    torch.testing.assert_close(ops.linear(x, w), x @ w.T, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ops.softmax(x, -1), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    print("ops on the cpu plugin: equal to torch's")

    if args.expect_aten:
        check("aten" in loaded,
              f"the ATen plugin built into {args.expect_aten} did not load; skipped: {plugins.skipped()}")
        check(os.path.dirname(loaded["aten"]["path"]) == os.path.abspath(args.expect_aten),
              f"the ATen plugin came from {loaded['aten']['path']}, not {args.expect_aten}")
        env = dict(os.environ, TORCHFERRY_PLUGINS="aten")
        code = (
            "import torch, torchferry\n"
            "from torchferry import ops, plugins\n"
            "assert [p['name'] for p in plugins.loaded()] == ['aten'], plugins.loaded()\n"
            "x, y = torch.randn(3, 5), torch.randn(3, 5)\n"
            "torch.testing.assert_close(ops.add(x, y), x + y, rtol=0, atol=0)\n"
            "torch.testing.assert_close(ops.matmul(x, y.T), x @ y.T)\n"
            "print('ops on the ATen plugin alone: equal to torch\\'s')\n"
        )
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    else:
        check("aten" not in loaded, f"an ATen plugin loaded from {loaded.get('aten', {}).get('path')}")

    info = subprocess.run([sys.executable, "-m", "torchferry", "info"], capture_output=True, text=True)
    check(info.returncode == 0, f"`python -m torchferry info` exited {info.returncode}: {info.stderr}")
    check(len(info.stdout.splitlines()) <= 40, f"`info` printed {len(info.stdout.splitlines())} lines")
    header = os.path.join(torchferry.include_dir(), "torchferry.h")
    check(os.path.isfile(header), f"the SDK header is missing: {header}")
    print("info and the SDK: present")
    print("smoke: ok")


if __name__ == "__main__":
    main()
