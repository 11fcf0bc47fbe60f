"""What the loader found: loaded plugins with their kernels, skipped plugins
with the reason, and kernels shadowed by a plugin of higher precedence."""

from . import _C, _require_started

_require_started()  # a bad TORCHFERRY_BRIDGE or TORCHFERRY_TENSOR_META


def loaded():
    return _C._plugins()


def skipped():
    return _C._skipped()


def shadowed():
    return _C._shadowed()


def entry_points():
    """The installed distributions' entry points (group torchferry.plugins):
    name, value, distribution, and the path each named (None with the error
    when it named nothing usable; that entry point is also in skipped())."""
    import torchferry

    return [dict(e) for e in torchferry.ENTRY_POINTS]


def kernel_for(op, device, dtype):
    """The name of the plugin that serves (op, device, dtype), or None."""
    return _C._kernel_for(op, device, dtype)


def set_option(plugin, key, value):
    """Passes an option to a plugin, e.g. set_option('aten', 'strategy', 'pool')."""
    _C._set_plugin_option(plugin, key, str(value))
