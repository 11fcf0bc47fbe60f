"""vendor_plugin for torchferry: the plugin library lives in this folder.

torchferry finds it through the `torchferry.plugins` entry point in
pyproject.toml, which names this package: its folder is found without
running this file, so nothing here may be needed at load time.
"""
