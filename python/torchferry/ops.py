"""The ops. Each takes tensors first, then attributes, then the keyword-only
`out=` (allocated when omitted, except for `cast`) and `stream=` (CUDA only:
a torch.cuda.Stream or a raw handle; torch's current stream by default).

Every op is one entry in the host's op table; `schemas()` lists them, and each
function carries its signature (`inspect.signature(torchferry.ops.add)`).
The functions are the native ones themselves: a call goes from Python straight
into C++ with no Python frame in between.
"""

from . import _C


def schemas():
    """One dict per op, in the op table's order: name, schema (torch's schema
    language), signature (as Python sees it), doc, dtypes ('any' or 'float':
    what the host lets through), aliasing ('exact': out may be the very same
    view as an input; 'none'), contract (what a kernel receives) and
    declared_by (None for built-in ops)."""
    return _C._schemas()


def _export():
    names = [s["name"] for s in _C._schemas()]
    globals().update({name: getattr(_C, name) for name in names})
    return sorted(names) + ["schemas"]


__all__ = _export()
