#include "core/python/readiness.h"

#include "core/bridge/bridge.h"
#include "core/bridge/py_errors.h"

namespace torchferry {

namespace {
bool g_loading = false;
}  // namespace

void SetLoading(bool loading) { g_loading = loading; }

bool EnsureInitialized() {
  if (Bridge::Get().initialized()) return true;
  if (g_loading) {
    // An entry point's module or callable runs inside `import torchferry`,
    // before the bridge starts: torchferry was imported, just not yet.
    return RaiseError(PyExc_RuntimeError,
                      "torchferry is still loading its plugins: this ran "
                      "during `import torchferry` (from an entry point's "
                      "module or callable), before plugins were loaded; call "
                      "it once the import has finished");
  }
  return RaiseError(PyExc_RuntimeError,
                    "torchferry._C is not initialised; import torchferry "
                    "(not torchferry._C) so that torch is found first");
}

}  // namespace torchferry
