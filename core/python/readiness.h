// Whether torchferry may take calls and queries yet: `import torchferry`
// starts the bridge, then loads the plugins; a query made before (from an
// entry point's module, say) gets an error that says which; a call made
// while they load is refused by the op functions (core/python/op_functions.cc).
#pragma once

namespace torchferry {

// False with a RuntimeError until `import torchferry` has started the bridge.
bool EnsureInitialized();
// Set while `import torchferry` resolves entry points and loads plugins, so
// that a query made then says so instead of blaming how torchferry was
// imported.
void SetLoading(bool loading);

}  // namespace torchferry
