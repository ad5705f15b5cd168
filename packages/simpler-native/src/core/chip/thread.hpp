// A joinable thread with a stack size chosen by the chip, not by the process (std::thread takes
// RLIMIT_STACK, anything from 1 MiB to "unlimited"). AICore threads run kernels whose tiles are
// locals (KERNEL_ABI.md: per-invocation scratch on the stack), so their stack is sized for the
// largest kernel pypto-ir accepts (see kCoreThreadStackBytes in chip.hpp).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>

namespace simpler::chip {

class Thread {
public:
    Thread() noexcept = default;
    // Starts fn on a new thread with a stack of stack_bytes (0: the process default) and a guard
    // region of guard_bytes below it. Throws std::system_error when the thread cannot start.
    Thread(std::size_t stack_bytes, std::size_t guard_bytes, std::function<void()> fn) {
        pthread_attr_t attr;
        if (int rc = pthread_attr_init(&attr); rc != 0) throw std::system_error(rc, std::generic_category(), "thread attributes");
        int rc = 0;
        if (stack_bytes != 0) rc = pthread_attr_setstacksize(&attr, stack_bytes);
        if (rc == 0 && guard_bytes != 0) rc = pthread_attr_setguardsize(&attr, guard_bytes);
        auto body = std::make_unique<std::function<void()>>(std::move(fn));
        if (rc == 0) rc = pthread_create(&id_, &attr, &Thread::trampoline, body.get());
        pthread_attr_destroy(&attr);
        if (rc != 0) throw std::system_error(rc, std::generic_category(), "starting a chip thread");
        body.release();  // owned by the thread now
        joinable_ = true;
    }
    Thread(const Thread&) = delete;
    Thread& operator=(const Thread&) = delete;
    Thread(Thread&& other) noexcept : id_(other.id_), joinable_(std::exchange(other.joinable_, false)) {}
    Thread& operator=(Thread&& other) noexcept {
        if (joinable_) std::terminate();  // as std::thread: never drop a running thread
        id_ = other.id_;
        joinable_ = std::exchange(other.joinable_, false);
        return *this;
    }
    ~Thread() {
        if (joinable_) std::terminate();
    }

    bool joinable() const noexcept { return joinable_; }
    void join() {
        if (!joinable_) return;
        if (int rc = pthread_join(id_, nullptr); rc != 0) throw std::system_error(rc, std::generic_category(), "joining a chip thread");
        joinable_ = false;
    }

private:
    static void* trampoline(void* arg) noexcept {
        std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(arg));
        (*body)();  // the loops catch what kernels throw; anything else terminates, as in std::thread
        return nullptr;
    }

    pthread_t id_{};
    bool joinable_ = false;
};

}  // namespace simpler::chip
