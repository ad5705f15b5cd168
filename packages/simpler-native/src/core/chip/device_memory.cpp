#include "device_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace simpler::chip {

DeviceMemory::~DeviceMemory() {
    for (auto& [addr, size] : allocations_) std::free(reinterpret_cast<void*>(addr));
}

std::uint64_t DeviceMemory::allocate(std::uint64_t nbytes) {
    if (nbytes == 0) throw std::invalid_argument("malloc(nbytes): expected nbytes > 0, got 0");
    const std::uint64_t rounded = (nbytes + 63) / 64 * 64;
    if (rounded < nbytes) throw std::bad_alloc();
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    const auto addr = reinterpret_cast<std::uint64_t>(p);
    std::lock_guard<std::mutex> lock(mu_);
    allocations_.emplace(addr, nbytes);
    live_bytes_ += nbytes;
    live_count_.store(allocations_.size(), std::memory_order_release);
    return addr;
}

void DeviceMemory::release(std::uint64_t addr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(addr);
    if (it == allocations_.end())
        throw std::invalid_argument("free(addr): expected the start of a live device allocation, got " +
                                    std::to_string(addr));
    live_bytes_ -= it->second;
    std::free(reinterpret_cast<void*>(it->first));
    allocations_.erase(it);
    live_count_.store(allocations_.size(), std::memory_order_release);
}

bool DeviceMemory::tracked_remaining(std::uint64_t addr, std::uint64_t* remaining) const noexcept {
    if (live_count_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.upper_bound(addr);
    if (it == allocations_.begin()) return false;
    --it;
    if (addr >= it->first + it->second) return false;
    *remaining = it->first + it->second - addr;
    return true;
}

void DeviceMemory::check_range(std::uint64_t addr, std::uint64_t nbytes, const char* what) const {
    std::uint64_t remaining = 0;
    if (!tracked_remaining(addr, &remaining))
        throw std::out_of_range(std::string(what) + ": address is not inside a live device allocation");
    if (nbytes > remaining)
        throw std::out_of_range(std::string(what) + ": " + std::to_string(nbytes) + " bytes run past the end of the allocation (" +
                                std::to_string(remaining) + " bytes left)");
}

void DeviceMemory::copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes) {
    if (nbytes == 0) return;
    check_range(dst, nbytes, "copy_to(dst)");
    std::memcpy(reinterpret_cast<void*>(dst), src, nbytes);
}

void DeviceMemory::copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) const {
    if (nbytes == 0) return;
    check_range(src, nbytes, "copy_from(src)");
    std::memcpy(dst, reinterpret_cast<const void*>(src), nbytes);
}

std::size_t DeviceMemory::live_allocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocations_.size();
}

std::uint64_t DeviceMemory::live_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_bytes_;
}

}  // namespace simpler::chip
