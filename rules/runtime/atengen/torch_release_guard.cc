// atengen::torch_release_matches: see torch_release_guard.h.
//
// Only C functions and libc10's c10::toString(DispatchKey) (unchanged since
// long before 2.11) are called into torch here, so the check itself is safe in
// any release.
//
// lib<name>.so's references to torch are weak (`atengen bound-link`): in
// another release the loader binds what that release lacks to address 0
// instead of refusing the library, so that this check, not a loader error,
// says what is wrong. In the release it was built for, the check also makes
// sure that every such reference found its symbol.
#include "atengen/torch_release_guard.h"

#include <c10/core/DispatchKey.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <torch/headeronly/version.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace atengen {
namespace {

constexpr const char kBuildRelease[] =
    C10_STRINGIZE(TORCH_VERSION_MAJOR) "." C10_STRINGIZE(TORCH_VERSION_MINOR);

// How to build once instead: aten_codegen's stable mode (rules/private/rules/stable.bzl).
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

// c10::toString, or nullptr where this torch does not define it. Passed
// through an empty asm: the compiler takes a function's address for non-null.
using ToString = const char* (*)(c10::DispatchKey);
ToString key_to_string() {
  ToString to_string = &c10::toString;
  __asm__ volatile("" : "+r"(to_string));
  return to_string;
}

// The version of the torch this process loaded libc10 from: torch/version.py
// of a wheel (lib/libc10.so beside it), or build-version at the root of a
// libtorch archive. `torch_dir` gets the directory either lives in.
std::string running_torch_version(std::string& torch_dir) {
  const ToString to_string = key_to_string();
  if (to_string == nullptr) {
    return "";  // a weak reference this torch does not define
  }
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
  const ToString to_string = key_to_string();
  if (to_string == nullptr) {
    return "CPU";  // no key can be checked
  }
  for (const Expected& e : kExpected) {
    const char* running = to_string(e.key);
    if (running == nullptr || std::strcmp(running, e.name) != 0) {
      return e.name;
    }
  }
  return nullptr;
}

// The dynamic section of the loaded object named `path`, and where it was loaded.
struct LoadedObject {
  const char* path;
  const ElfW(Dyn)* dynamic = nullptr;
  ElfW(Addr) base = 0;
};

int find_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* object = static_cast<LoadedObject*>(data);
  if (info->dlpi_name == nullptr || std::strcmp(info->dlpi_name, object->path) != 0) {
    return 0;
  }
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      object->dynamic =
          reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      object->base = info->dlpi_addr;
    }
  }
  return 1;
}

// The first weak C++ reference of the library at `path` that nothing loaded
// defines, or "" if every one is bound. The undefined symbols of .dynsym are
// the ones before the first the GNU hash table covers (all of them, with only
// a SysV hash table).
std::string first_unbound_reference(const std::string& path) {
  LoadedObject object{path.c_str()};
  dl_iterate_phdr(find_object, &object);
  void* self = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (object.dynamic == nullptr || self == nullptr) {
    return "";
  }
  // The loader may have relocated these addresses in place, or not.
  auto address = [&](ElfW(Addr) a) { return a < object.base ? a + object.base : a; };
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  size_t undefined_end = 0;
  for (const ElfW(Dyn)* d = object.dynamic; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) {
      symbols = reinterpret_cast<const ElfW(Sym)*>(address(d->d_un.d_ptr));
    } else if (d->d_tag == DT_STRTAB) {
      names = reinterpret_cast<const char*>(address(d->d_un.d_ptr));
    } else if (d->d_tag == DT_GNU_HASH) {
      undefined_end = reinterpret_cast<const uint32_t*>(address(d->d_un.d_ptr))[1];
    } else if (d->d_tag == DT_HASH && undefined_end == 0) {
      undefined_end = reinterpret_cast<const uint32_t*>(address(d->d_un.d_ptr))[1];
    }
  }
  std::string unbound;
  for (size_t i = 1; symbols != nullptr && names != nullptr && i < undefined_end; ++i) {
    const ElfW(Sym)& s = symbols[i];
    const char* name = names + s.st_name;
    // Not a TLS init function (_ZTH): every user of an extern thread_local
    // refers to one weakly, and it exists only where the variable needs
    // dynamic initialization.
    if (s.st_shndx == SHN_UNDEF && ELF64_ST_BIND(s.st_info) == STB_WEAK &&
        std::strncmp(name, "_Z", 2) == 0 && std::strncmp(name, "_ZTH", 4) != 0 &&
        dlsym(self, name) == nullptr) {
      unbound = name;
      break;
    }
  }
  dlclose(self);
  return unbound;
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
  const std::string path = object_path(reinterpret_cast<const void*>(&torch_release_matches));
  const std::string library = path.empty() ? "this library" : path;
  std::string message = "rules_aten: " + library + " was compiled against torch " +
      kBuildRelease + " and cannot load into ";
  if ((running == kBuildRelease || running.empty()) && renumbered == nullptr) {
    // The same release (or not a wheel or libtorch layout, and the keys agree).
    const std::string unbound = path.empty() ? "" : first_unbound_reference(path);
    if (unbound.empty()) {
      return true;
    }
    message += "torch " + (running.empty() ? std::string("?") : running_version) + " (" +
        torch_dir + "), which does not define " + unbound +
        ": nothing of it is registered; rebuild it against this torch";
  } else if (!running.empty() && running != kBuildRelease) {
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
