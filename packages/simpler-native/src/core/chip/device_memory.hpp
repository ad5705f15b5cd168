// Device memory of the simulated chip: host memory whose allocations are tracked, so that
// free/copy calls and tensor descriptors can be checked against what was really allocated.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace simpler::chip {

class DeviceMemory {
public:
    DeviceMemory() = default;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;
    ~DeviceMemory();

    // 64-byte aligned, zero-filled. Throws std::invalid_argument for 0 bytes, std::bad_alloc.
    std::uint64_t allocate(std::uint64_t nbytes);
    // Throws std::invalid_argument unless `addr` is the start of a live allocation.
    void release(std::uint64_t addr);
    // Throws std::out_of_range unless [addr, addr + nbytes) lies inside one live allocation.
    void check_range(std::uint64_t addr, std::uint64_t nbytes, const char* what) const;
    // If `addr` lies inside a live allocation, the bytes from addr to its end; else 0 and false.
    bool tracked_remaining(std::uint64_t addr, std::uint64_t* remaining) const noexcept;
    void copy_to_device(std::uint64_t dst, const void* src, std::uint64_t nbytes);
    void copy_from_device(void* dst, std::uint64_t src, std::uint64_t nbytes) const;
    std::size_t live_allocations() const;
    std::uint64_t live_bytes() const;

private:
    mutable std::mutex mu_;
    std::map<std::uint64_t, std::uint64_t> allocations_;  // start -> size
    std::uint64_t live_bytes_ = 0;
    // allocations_.size(), readable without mu_: with no allocation live, tracked_remaining
    // (every submitted tensor's check) answers without the lock and the map.
    std::atomic<std::size_t> live_count_{0};
};

}  // namespace simpler::chip
