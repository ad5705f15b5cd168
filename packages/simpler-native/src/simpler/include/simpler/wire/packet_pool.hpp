// PacketBufferPool, PacketQueue and CopyingAicpuRunner: the host-memory half of a
// copy-on-enqueue transport, used by the simulated AICPU, the C++ and Python tests and the
// probe's simulated device.
//
// The runner copies each launched block into a pooled buffer and queues it; a consumer pops
// buffers and lets them go. A PooledBuffer returns its storage to the pool exactly once (when it
// is destroyed), so clearing the queue releases everything still held, and nothing is released
// twice. The pool must outlive every buffer it handed out.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "simpler/wire/aligned_bytes.hpp"
#include "simpler/wire/transport.hpp"

namespace simpler {

class PacketBufferPool;

class PooledBuffer {
  public:
    PooledBuffer() = default;
    PooledBuffer(PooledBuffer&& o) noexcept { *this = std::move(o); }
    PooledBuffer& operator=(PooledBuffer&& o) noexcept;
    PooledBuffer(const PooledBuffer&) = delete;
    PooledBuffer& operator=(const PooledBuffer&) = delete;
    ~PooledBuffer() { reset(); }

    std::uint8_t* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    explicit operator bool() const noexcept { return static_cast<bool>(data_); }
    inline void reset() noexcept;  // return the storage to the pool now

  private:
    friend class PacketBufferPool;
    PacketBufferPool* pool_ = nullptr;
    AlignedBytes data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

class PacketBufferPool {
  public:
    explicit PacketBufferPool(std::size_t max_free = 64) : max_free_(max_free) {}
    PacketBufferPool(const PacketBufferPool&) = delete;
    PacketBufferPool& operator=(const PacketBufferPool&) = delete;

    // A buffer of `bytes` (reusing a free one that is large enough); empty on allocation failure.
    PooledBuffer acquire(std::size_t bytes) noexcept {
        PooledBuffer b;
        {
            std::scoped_lock lock(mu_);
            for (std::size_t i = 0; i < free_.size(); ++i) {
                if (free_[i].second >= bytes) {
                    b.data_ = std::move(free_[i].first);
                    b.capacity_ = free_[i].second;
                    free_[i] = std::move(free_.back());
                    free_.pop_back();
                    break;
                }
            }
        }
        if (!b.data_) {
            b.data_ = allocate_aligned_bytes(bytes == 0 ? 1 : bytes);
            if (!b.data_) return PooledBuffer();
            b.capacity_ = bytes == 0 ? 1 : bytes;
        }
        b.size_ = bytes;
        b.pool_ = this;
        std::scoped_lock lock(mu_);
        ++acquired_;
        return b;
    }

    std::uint64_t acquired() const noexcept { std::scoped_lock lock(mu_); return acquired_; }
    std::uint64_t released() const noexcept { std::scoped_lock lock(mu_); return released_; }
    std::uint64_t outstanding() const noexcept { std::scoped_lock lock(mu_); return acquired_ - released_; }
    std::size_t free_buffers() const noexcept { std::scoped_lock lock(mu_); return free_.size(); }

  private:
    friend class PooledBuffer;
    void release(AlignedBytes data, std::size_t capacity) noexcept {
        std::scoped_lock lock(mu_);
        ++released_;
        if (free_.size() < max_free_) free_.emplace_back(std::move(data), capacity);
        // else: `data` is freed when it goes out of scope here
    }

    mutable std::mutex mu_;
    std::vector<std::pair<AlignedBytes, std::size_t>> free_;
    std::size_t max_free_;
    std::uint64_t acquired_ = 0;
    std::uint64_t released_ = 0;
};

inline PooledBuffer& PooledBuffer::operator=(PooledBuffer&& o) noexcept {
    if (this != &o) {
        reset();
        pool_ = std::exchange(o.pool_, nullptr);
        data_ = std::move(o.data_);
        size_ = std::exchange(o.size_, 0);
        capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
}

inline void PooledBuffer::reset() noexcept {
    if (pool_ != nullptr && data_) pool_->release(std::move(data_), capacity_);
    pool_ = nullptr;
    data_.reset();
    size_ = capacity_ = 0;
}

// FIFO of copied blocks between a producer (the runner) and a consumer thread.
class PacketQueue {
  public:
    void push(PooledBuffer b) {
        {
            std::scoped_lock lock(mu_);
            q_.push_back(std::move(b));
        }
        cv_.notify_one();
    }
    std::optional<PooledBuffer> try_pop() {
        std::scoped_lock lock(mu_);
        if (q_.empty()) return std::nullopt;
        PooledBuffer b = std::move(q_.front());
        q_.pop_front();
        return b;
    }
    // Wait up to `timeout` for a block; nullopt on timeout.
    std::optional<PooledBuffer> wait_pop(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mu_);
        if (!cv_.wait_for(lock, timeout, [&] { return !q_.empty(); })) return std::nullopt;
        PooledBuffer b = std::move(q_.front());
        q_.pop_front();
        return b;
    }
    // Release every queued block (each exactly once); returns how many were released.
    std::size_t clear() noexcept {
        std::deque<PooledBuffer> drained;
        {
            std::scoped_lock lock(mu_);
            drained.swap(q_);
        }
        const std::size_t n = drained.size();
        drained.clear();  // buffers go back to the pool outside the queue lock
        return n;
    }
    std::size_t size() const {
        std::scoped_lock lock(mu_);
        return q_.size();
    }
    ~PacketQueue() { clear(); }

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<PooledBuffer> q_;
};

// Copy-on-enqueue runner over a pool and a queue: copies the block, queues the copy, returns.
class CopyingAicpuRunner final : public AicpuPayloadRunner {
  public:
    static constexpr int kRunnerNullBlock = 1;
    static constexpr int kRunnerOutOfMemory = 2;
    static constexpr int kRunnerQueueFailure = 3;

    CopyingAicpuRunner(PacketBufferPool& pool, PacketQueue& queue) noexcept : pool_(pool), queue_(queue) {}

    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        if (block == nullptr || bytes == 0) return kRunnerNullBlock;
        PooledBuffer b = pool_.acquire(bytes);
        if (!b) return kRunnerOutOfMemory;
        std::memcpy(b.data(), block, bytes);
        try {
            queue_.push(std::move(b));
        } catch (...) {
            return kRunnerQueueFailure;
        }
        return 0;
    }

  private:
    PacketBufferPool& pool_;
    PacketQueue& queue_;
};

}  // namespace simpler
