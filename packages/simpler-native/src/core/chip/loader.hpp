// Loading compiled binaries from bytes: the bytes go to a private temp file (mode 0600 in a
// fresh private directory), are dlopen'ed RTLD_NOW | RTLD_LOCAL, and the file is unlinked right
// after the load, so no path an artifact names is ever trusted or left behind. Symbols are
// resolved once (at registration) with symbol().
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace simpler::chip {

class LoadedBinary {
public:
    // Throws std::invalid_argument (empty bytes) or std::runtime_error (dlopen failure, with
    // the loader's message) naming `what`.
    static std::shared_ptr<LoadedBinary> load(const void* bytes, std::size_t size, const std::string& what);
    ~LoadedBinary();
    LoadedBinary(const LoadedBinary&) = delete;
    LoadedBinary& operator=(const LoadedBinary&) = delete;

    // nullptr when absent.
    void* find(const char* name) const noexcept;
    // Throws std::invalid_argument naming the symbol and the binary when absent.
    void* symbol(const char* name) const;
    const std::string& what() const noexcept { return what_; }

private:
    LoadedBinary(void* handle, std::string what) : handle_(handle), what_(std::move(what)) {}
    void* handle_;
    std::string what_;
};

}  // namespace simpler::chip
