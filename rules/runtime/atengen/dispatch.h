// Typed operator handles, for the generated shards that call operators
// through the dispatcher without at::_ops declarations (custom namespaces'
// ops, Functionalize and BackendSelect kernels). Apart from "atengen/runtime.h"
// because the dispatcher's headers cost every source that includes them (see
// there).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include "atengen/runtime.h"

namespace atengen {

// Typed handle to an operator, looked up once by the caller (a static).
template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

}  // namespace atengen
