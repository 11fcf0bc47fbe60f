// Whether torchferry may take calls and queries yet: `import torchferry`
// starts the bridge, then loads the plugins; a query made before (from an
// entry point's module, say) or a call made while they load (from a plugin's
// init) gets an error that says which.
#pragma once

namespace torchferry {

// False with a RuntimeError until `import torchferry` has started the bridge.
bool EnsureInitialized();
// Set while `import torchferry` resolves entry points and loads plugins, so
// that a query made then says so instead of blaming how torchferry was
// imported.
void SetLoading(bool loading);
// EnsureInitialized, and every plugin loaded: a call from inside a plugin's
// init (which runs while plugins load) would see only part of the registry.
bool EnsureReady(const char* op);

}  // namespace torchferry
