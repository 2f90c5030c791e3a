// The check every generated registration passes first: a library compiled
// against one torch release registers nothing in a process that runs another.
//
// torch's C++ ABI changes with every release. The values of c10::DispatchKey
// are compiled into each registration, so a library built for 2.12 and loaded
// into 2.13 would register its CPU kernels under another key, without any
// error; other changes crash or fail later. The check runs once per library,
// before its first registration, whichever static initializer comes first.
#pragma once

namespace atengen {

// Whether the torch this process runs is the release (major.minor) this
// library was compiled against. On the first call that finds another release,
// one line on stderr names both, and in a Python process the loading call
// (torch.ops.load_library, ctypes) raises it as an ImportError.
//
// Hidden, like every definition the guard needs: torch.ops.load_library loads
// with RTLD_GLOBAL, so an exported definition of the first library loaded
// would answer for every later one.
__attribute__((visibility("hidden"))) bool torch_release_matches() noexcept;

}  // namespace atengen
