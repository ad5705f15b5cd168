#include "loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace simpler::chip {

namespace {

std::string temp_root() {
    const char* t = std::getenv("TMPDIR");
    return (t != nullptr && *t != '\0') ? std::string(t) : std::string("/tmp");
}

}  // namespace

std::shared_ptr<LoadedBinary> LoadedBinary::load(const void* bytes, std::size_t size, const std::string& what) {
    if (bytes == nullptr || size == 0)
        throw std::invalid_argument(what + ": expected the bytes of a shared object, got 0 bytes");
    std::string dir = temp_root() + "/simpler-load-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr)
        throw std::runtime_error(what + ": cannot create a private load directory: " + std::strerror(errno));
    const std::string path = dir + "/binary.so";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        const int err = errno;
        ::rmdir(dir.c_str());
        throw std::runtime_error(what + ": cannot create the load file: " + std::strerror(err));
    }
    const auto* p = static_cast<const char*>(bytes);
    std::size_t left = size;
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(path.c_str());
            ::rmdir(dir.c_str());
            throw std::runtime_error(what + ": cannot write the load file: " + std::strerror(err));
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    ::close(fd);
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* err = handle == nullptr ? ::dlerror() : nullptr;
    const std::string message = err != nullptr ? err : "";
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
    if (handle == nullptr) throw std::runtime_error(what + ": not a loadable shared object: " + message);
    return std::shared_ptr<LoadedBinary>(new LoadedBinary(handle, what));
}

LoadedBinary::~LoadedBinary() {
    if (handle_ != nullptr) ::dlclose(handle_);
}

void* LoadedBinary::find(const char* name) const noexcept { return ::dlsym(handle_, name); }

void* LoadedBinary::symbol(const char* name) const {
    void* s = find(name);
    if (s == nullptr)
        throw std::invalid_argument(what_ + ": binary does not export '" + name +
                                    "' (extern \"C\", visibility default)");
    return s;
}

}  // namespace simpler::chip
