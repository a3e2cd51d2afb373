#pragma once
// Loading a shared library when it is first needed (dlopen), so that verbs that never
// use it do not pay for loading and relocating it at start-up.

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "base/error.h"

namespace ktrain {

/// A library opened with dlopen (and never closed: it stays loaded for the process),
/// and the names of the symbols that could not be bound.
class DynamicLibrary {
 public:
  /// Opens `soname` (RTLD_NOW | RTLD_LOCAL); check ok() and error().
  explicit DynamicLibrary(const char* soname) : soname_(soname) {
    handle_ = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* why = ::dlerror();
      error_ = std::string("cannot load ") + soname + " (" + (why ? why : "not found") + ")";
    }
  }
  /// Sets `fn` to the symbol `name`; a missing one is remembered for error().
  template <typename F>
  void bind(F*& fn, const char* name) {
    fn = handle_ ? reinterpret_cast<F*>(::dlsym(handle_, name)) : nullptr;
    if (handle_ && !fn) missing_ += std::string(missing_.empty() ? "" : ", ") + name;
  }
  /// Sets `fn` to the symbol `name`, or nullptr when the library lacks it (a feature
  /// used when present).
  template <typename F>
  void bind_optional(F*& fn, const char* name) {
    fn = handle_ ? reinterpret_cast<F*>(::dlsym(handle_, name)) : nullptr;
  }
  /// Opened, and every bound symbol found.
  bool ok() const { return handle_ && missing_.empty(); }
  /// Why not ok(): the library could not be opened, or which symbols it lacks.
  std::string error() const {
    if (!handle_) return error_;
    return soname_ + " lacks " + missing_;
  }

 private:
  std::string soname_;
  void* handle_ = nullptr;
  std::string error_;
  std::string missing_;
};

/// The table of functions `Table` of library `soname`, filled by `bind(dl, table)` the
/// first time it is asked for and kept for the process. `bind` binds the symbols and
/// may finish setting up once all are there (dl.ok()). When the library or a symbol is
/// missing, every call throws the same Error: what is missing, then `hint` (how to
/// install it). Each call site (each `bind`) has a table of its own.
template <typename Table, typename Bind>
const Table& load_library_once(const char* soname, const char* hint, Bind bind) {
  static Table table;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [&] {
    DynamicLibrary dl(soname);
    bind(dl, table);
    if (!dl.ok()) failure = dl.error() + "; " + hint;
  });
  if (!failure.empty()) throw Error(failure);
  return table;
}

}  // namespace ktrain
