"""The C++ of a kernel that calls ``pl.system.syncall``: its SPMD blocks run as one group.

On the chip the blocks of an SPMD launch run at once on different cores, and ``syncall`` makes
each wait until all have reached it. The simulated chip runs each block as a task on an AICore
thread, one after another when they share an output, so a barrier among tasks would never be
passed. A kernel that calls ``syncall`` is emitted instead as a block function plus an entry
that runs the whole launch itself: the task of block 0 starts one thread per block (each with
the AICore stack size, its own copy of the arguments with its block index, the caller's
kernel context and on-chip buffers of its own), the threads meet at a real barrier at each ``syncall``, and the entry returns
once every block has; the tasks of blocks 1..n-1 return at once. A failure a block reports
(the kernel ABI's per-thread error slot) is reported by the entry, so the run fails naming it.
"""

from __future__ import annotations

__all__ = ["BARRIER", "BLOCK_FN", "BLOCK_STACK_BYTES", "GROUP_HELPERS", "SPMD_PARAMS", "group_entry"]

SPMD_PARAMS = ("pypto_block_idx", "pypto_block_num")
"""The hidden trailing scalar parameters of a kernel that reads its SPMD block (or syncs)."""
BLOCK_STACK_BYTES = 16 << 20
"""The stack of each block's thread: an AICore thread's (simpler's ``kCoreThreadStackBytes``)."""
BLOCK_FN = "pypto_block"
BARRIER = "pypto_syncall"

GROUP_HELPERS = r"""#include <condition_variable>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <vector>

namespace {

// The barrier of pl.system.syncall among the blocks of one launch; broken (every wait returns)
// once a block has failed, so the others do not wait for it forever.
class PyptoBlockBarrier {
public:
    explicit PyptoBlockBarrier(std::int64_t count) : count_(count) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mu_);
        if (broken_) return;
        const std::int64_t generation = generation_;
        if (++arrived_ == count_) {
            arrived_ = 0;
            ++generation_;
            cv_.notify_all();
            return;
        }
        cv_.wait(lock, [&] { return generation_ != generation || broken_; });
    }
    void break_barrier() noexcept {
        std::lock_guard<std::mutex> lock(mu_);
        broken_ = true;
        cv_.notify_all();
    }
    std::int64_t count() const noexcept { return count_; }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::int64_t count_;
    std::int64_t arrived_ = 0;
    std::int64_t generation_ = 0;
    bool broken_ = false;
};

struct PyptoBlock {
    std::vector<std::int64_t> args;
    PyptoBlockBarrier* barrier = nullptr;
    // The caller's kernel context without its core's buffers: the blocks run at once, so each
    // block thread gets on-chip buffers of its own (a thread with none gets a default set).
    simpler::KernelContext context{};
    bool has_context = false;
    bool failed = false;
    char message[512] = {0};
};

void pypto_block(std::int64_t* args, PyptoBlockBarrier& pypto_syncall);

void* pypto_block_thread(void* p) {
    auto* b = static_cast<PyptoBlock*>(p);
    simpler::current_kernel_context() = b->has_context ? &b->context : nullptr;
    try {
        pypto_block(b->args.data(), *b->barrier);
    } catch (...) {
        simpler::report_kernel_error("a block of the SPMD launch raised a C++ exception");
    }
    simpler::KernelErrorSlot& slot = simpler::kernel_error_slot();
    if (slot.set) {
        b->failed = true;
        std::memcpy(b->message, slot.message, sizeof b->message);
        slot.set = false;
        b->barrier->break_barrier();
    }
    return nullptr;
}

}  // namespace
"""


def group_entry(entry: str, nargs: int, idx_at: int | None, count: str | None, stack_bytes: int) -> str:
    """The entry of a kernel that calls ``syncall``: ``args[idx_at]`` is its block index and
    ``count`` the C++ expression of its block count (``None``: not an SPMD kernel, one block)."""
    if idx_at is None or count is None:
        return (
            f'extern "C" __attribute__((visibility("default"))) void {entry}(std::int64_t* args) {{\n'
            "    PyptoBlockBarrier barrier(1);\n"
            f"    {BLOCK_FN}(args, barrier);\n"
            "}\n"
        )
    return f"""extern "C" __attribute__((visibility("default"))) void {entry}(std::int64_t* args) {{
    const std::int64_t index = sk::scalar_arg<std::int64_t>(args[{idx_at}]);
    const std::int64_t count = {count};
    if (index != 0) return;  // the task of block 0 runs every block of the launch
    if (count < 1) {{
        simpler::report_kernel_error("pl.system.syncall: the launch has %lld blocks", static_cast<long long>(count));
        return;
    }}
    PyptoBlockBarrier barrier(count);
    std::vector<PyptoBlock> blocks(static_cast<std::size_t>(count));
    std::vector<pthread_t> threads(static_cast<std::size_t>(count));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, {stack_bytes});
    std::int64_t started = 0;
    for (std::int64_t b = 0; b < count; ++b) {{
        PyptoBlock& block = blocks[static_cast<std::size_t>(b)];
        block.args.assign(args, args + {nargs});
        block.args[{idx_at}] = b;
        block.barrier = &barrier;
        if (const simpler::KernelContext* caller = simpler::current_kernel_context()) {{
            block.context = *caller;
            block.context.buffers = nullptr;
            block.has_context = true;
        }}
        if (pthread_create(&threads[static_cast<std::size_t>(b)], &attr, pypto_block_thread, &block) != 0) {{
            simpler::report_kernel_error("pl.system.syncall: could not start the thread of block %lld of %lld",
                                         static_cast<long long>(b), static_cast<long long>(count));
            barrier.break_barrier();
            break;
        }}
        ++started;
    }}
    for (std::int64_t b = 0; b < started; ++b) pthread_join(threads[static_cast<std::size_t>(b)], nullptr);
    pthread_attr_destroy(&attr);
    for (std::int64_t b = 0; b < started; ++b) {{
        const PyptoBlock& block = blocks[static_cast<std::size_t>(b)];
        if (block.failed) {{
            simpler::report_kernel_error("block %lld of %lld: %s", static_cast<long long>(b),
                                         static_cast<long long>(count), block.message);
            return;
        }}
    }}
}}
"""
