"""torchferry: hand torch tensors to native kernels shipped as versioned plugins.

    import torch, torchferry
    x = torch.randn(8, 4096)
    out = torch.empty_like(x)
    torchferry.ops.silu(x, out=out)

`torchferry.ops` holds the ops, `torchferry.bridge` the tensor bridge and its
path counters, `torchferry.plugins` what was loaded and what was skipped.
`python -m torchferry info` shows all of it.
"""

import os as _os

import torch as _torch

__version__ = "0.1.0"

MIN_TORCH = (2, 3)


def _release(version):
    """(major, minor) of a torch version string such as '2.14.1+cu130'."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ImportError(
            f"torchferry could not parse the torch version {version!r}; expected 'X.Y.Z'"
        ) from None


if _release(_torch.__version__) < MIN_TORCH:
    raise ImportError(
        f"torchferry needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]}, found torch "
        f"{_torch.__version__} at {_os.path.dirname(_torch.__file__)}; "
        "upgrade torch (pip install 'torch>=2.3')"
    )

from . import _C  # noqa: E402  (torch must be loaded first: the bridge finds it)

PLUGIN_DIR = _os.path.join(_os.path.dirname(__file__), "plugins")
_C._init(_torch, _torch.__version__, PLUGIN_DIR)

from . import bridge, ops, plugins  # noqa: E402

__all__ = ["bridge", "ops", "plugins", "__version__"]
