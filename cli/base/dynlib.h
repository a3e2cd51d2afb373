#pragma once
// Loading a shared library when it is first needed (dlopen), so that verbs that never
// use it do not pay for loading and relocating it at start-up.

#include <dlfcn.h>

#include <string>

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

}  // namespace ktrain
