// The definition of atengen::kernel (declared in "atengen/runtime.h"), for the
// generated KernelSignatures_*.cpp sources only: they instantiate it once per
// kernel signature of their library. Explicit instantiations are weak (COMDAT)
// symbols, so libraries that share a signature link together.
#pragma once

#include <torch/library.h>

#include "atengen/runtime.h"

namespace atengen {

template <typename Signature>
torch::CppFunction kernel(Signature* fn) {
  return torch::CppFunction(fn);
}

}  // namespace atengen
