// atengen::torch_release_matches: see torch_release_guard.h.
//
// Only C functions and libc10's c10::toString(DispatchKey) (unchanged since
// long before 2.11) are called into torch here, so the check itself is safe in
// any release.
#include "atengen/torch_release_guard.h"

#include <c10/core/DispatchKey.h>
#include <dlfcn.h>
#include <torch/headeronly/version.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace atengen {
namespace {

constexpr const char kBuildRelease[] =
    C10_STRINGIZE(TORCH_VERSION_MAJOR) "." C10_STRINGIZE(TORCH_VERSION_MINOR);

// How to build once instead: aten_codegen's stable mode (rules/private/stable.bzl).
constexpr const char kBuildOnce[] =
    ", or with aten_codegen(abi = \"stable\") to load into every release from 2.11";

// "2.13" of "2.13.0+cpu" (or of "2.13"); empty when the text does not start
// with two dot-separated numbers.
std::string release_of(const std::string& version) {
  size_t end = 0;
  int dots = 0;
  while (end < version.size()) {
    const char c = version[end];
    if (c == '.') {
      if (++dots == 2) {
        break;
      }
    } else if (c < '0' || c > '9') {
      break;
    }
    ++end;
  }
  const std::string release = version.substr(0, end);
  const size_t dot = release.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == release.size()) {
    return "";
  }
  return release;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The shared object that holds `address`, or "" if the loader does not know.
std::string object_path(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

// The version of the torch this process loaded libc10 from: torch/version.py
// of a wheel (lib/libc10.so beside it), or build-version at the root of a
// libtorch archive. `torch_dir` gets the directory either lives in.
std::string running_torch_version(std::string& torch_dir) {
  const char* (*to_string)(c10::DispatchKey) = &c10::toString;
  const std::string libc10 = object_path(reinterpret_cast<const void*>(to_string));
  if (libc10.empty()) {
    return "";
  }
  torch_dir = parent_of(parent_of(libc10));
  std::ifstream version_py(torch_dir + "/version.py");
  std::string line;
  while (std::getline(version_py, line)) {
    if (line.rfind("__version__", 0) != 0) {
      continue;
    }
    const size_t open = line.find_first_of("'\"");
    if (open != std::string::npos) {
      return line.substr(open + 1, line.find_first_of("'\"", open + 1) - open - 1);
    }
  }
  std::ifstream build_version(torch_dir + "/build-version");
  if (std::getline(build_version, line)) {
    return line;
  }
  return "";
}

// The first dispatch key whose value, as compiled into this library, the
// running torch names differently; nullptr if all agree. The keys that
// generated registrations use.
const char* first_renumbered_key() {
  struct Expected {
    c10::DispatchKey key;
    const char* name;
  };
  static const Expected kExpected[] = {
      {c10::DispatchKey::CPU, "CPU"},
      {c10::DispatchKey::CUDA, "CUDA"},
      {c10::DispatchKey::Meta, "Meta"},
      {c10::DispatchKey::PrivateUse1, "PrivateUse1"},
      {c10::DispatchKey::Lazy, "Lazy"},
      {c10::DispatchKey::XLA, "XLA"},
      {c10::DispatchKey::BackendSelect, "BackendSelect"},
      {c10::DispatchKey::Functionalize, "Functionalize"},
      {c10::DispatchKey::ADInplaceOrView, "ADInplaceOrView"},
      {c10::DispatchKey::Autograd, "Autograd"},
      {c10::DispatchKey::AutogradCPU, "AutogradCPU"},
      {c10::DispatchKey::CompositeImplicitAutograd, "CompositeImplicitAutograd"},
      {c10::DispatchKey::CompositeExplicitAutograd, "CompositeExplicitAutograd"},
  };
  for (const Expected& e : kExpected) {
    const char* running = c10::toString(e.key);
    if (running == nullptr || std::strcmp(running, e.name) != 0) {
      return e.name;
    }
  }
  return nullptr;
}

// In a Python process, makes the refusal the exception of the call that is
// loading this library: CPython raises an error that is set when dlopen
// returns (as the cause of a SystemError, under torch.ops.load_library's
// OSError). Looked up at run time: the library does not link libpython.
// Returns whether it did.
bool raise_in_python(const std::string& message) {
  using IsInitialized = int (*)();
  using Ensure = int (*)();
  using Release = void (*)(int);
  using SetString = void (*)(void*, const char*);
  auto is_initialized = reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  auto set_string = reinterpret_cast<SetString>(dlsym(RTLD_DEFAULT, "PyErr_SetString"));
  auto import_error = static_cast<void**>(dlsym(RTLD_DEFAULT, "PyExc_ImportError"));
  if (is_initialized == nullptr || ensure == nullptr || release == nullptr ||
      set_string == nullptr || import_error == nullptr || is_initialized() == 0) {
    return false;
  }
  const int gil = ensure();
  set_string(*import_error, message.c_str());
  release(gil);
  return true;
}

bool check() {
  std::string torch_dir = "?";
  const std::string running_version = running_torch_version(torch_dir);
  const std::string running = release_of(running_version);
  const char* renumbered = first_renumbered_key();
  if (running == kBuildRelease && renumbered == nullptr) {
    return true;
  }
  if (running.empty() && renumbered == nullptr) {
    // Not a wheel or libtorch layout, and the keys agree: nothing says otherwise.
    return true;
  }
  std::string library = object_path(reinterpret_cast<const void*>(&torch_release_matches));
  if (library.empty()) {
    library = "this library";
  }
  std::string message = "rules_aten: " + library + " was compiled against torch " +
      kBuildRelease + " and cannot load into ";
  if (!running.empty() && running != kBuildRelease) {
    message += "torch " + running_version + " (" + torch_dir + "): nothing of it is registered; " +
        "rebuild it against torch " + running + kBuildOnce;
  } else {
    message += "the torch at " + torch_dir + ", whose dispatch key " + renumbered +
        " has another number: nothing of it is registered; rebuild it against that torch" +
        kBuildOnce;
  }
  if (!raise_in_python(message)) {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
  return false;
}

}  // namespace

bool torch_release_matches() noexcept {
  try {
    static const bool matches = check();
    return matches;
  } catch (...) {
    // Out of memory while reading a file: refuse rather than risk a wrong registration.
    return false;
  }
}

}  // namespace atengen
