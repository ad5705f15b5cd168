#include "comm.hpp"

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace simpler::chip {
namespace {

struct Held {
    CommContext context{};
    std::vector<CommWindow> windows;
};

std::mutex g_mu;
std::vector<std::unique_ptr<Held>> g_held;  // every context ever published (kernels may hold one)
std::atomic<const CommContext*> g_current{nullptr};

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("comm context: " + what); }

}  // namespace

void set_comm_context(std::uint32_t rank, std::uint32_t nranks, CommPath path, const std::vector<CommWindow>& windows,
                      double wait_timeout_s, const CommHostOps* host) {
    if (nranks == 0 || nranks > kMaxCommRanks)
        bad("nranks must be 1.." + std::to_string(kMaxCommRanks) + ", got " + std::to_string(nranks));
    if (rank >= nranks) bad("rank must be < nranks (" + std::to_string(nranks) + "), got " + std::to_string(rank));
    if (path != CommPath::SharedMemory && path != CommPath::Host)
        bad("path must be CommPath.SharedMemory (0) or CommPath.Host (1), got " +
            std::to_string(static_cast<std::uint32_t>(path)));
    if (path == CommPath::Host && (host == nullptr || host->call == nullptr))
        bad("path CommPath.Host needs the host process's functions (host), got none");
    if (path == CommPath::SharedMemory && host != nullptr)
        bad("path CommPath.SharedMemory takes no host functions (host must be null)");
    if (windows.size() > kMaxCommWindows)
        bad("at most " + std::to_string(kMaxCommWindows) + " windows, got " + std::to_string(windows.size()));
    if (!(std::isfinite(wait_timeout_s) && wait_timeout_s > 0))
        bad("wait_timeout must be a finite number of seconds > 0, got " + std::to_string(wait_timeout_s));
    for (std::size_t i = 0; i < windows.size(); ++i) {
        const CommWindow& w = windows[i];
        const std::string at = "windows[" + std::to_string(i) + "]";
        if (w.base == 0) bad(at + ".base is null");
        if (w.stride == 0 || w.nbytes > w.stride)
            bad(at + ": expected 0 <= nbytes <= stride and stride > 0, got nbytes " + std::to_string(w.nbytes) +
                ", stride " + std::to_string(w.stride));
        std::uint64_t span = 0, end = 0;
        if (__builtin_mul_overflow(w.stride, static_cast<std::uint64_t>(nranks), &span) ||
            __builtin_add_overflow(w.base, span, &end))
            bad(at + ": base + nranks * stride overflows 64 bits");
        for (std::size_t j = 0; j < i; ++j) {
            const CommWindow& o = windows[j];
            if (w.base < o.base + o.stride * nranks && o.base < end)
                bad(at + " overlaps windows[" + std::to_string(j) + "]");
        }
    }
    auto held = std::make_unique<Held>();
    held->windows = windows;
    const double ns = wait_timeout_s * 1e9;
    held->context = CommContext{rank,
                                nranks,
                                path,
                                static_cast<std::uint32_t>(windows.size()),
                                ns >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(ns < 1 ? 1 : ns),
                                held->windows.data(),
                                host};
    std::lock_guard<std::mutex> lk(g_mu);
    g_held.push_back(std::move(held));
    g_current.store(&g_held.back()->context, std::memory_order_release);
}

void clear_comm_context() noexcept { g_current.store(nullptr, std::memory_order_release); }

const CommContext* comm_context() noexcept { return g_current.load(std::memory_order_acquire); }

}  // namespace simpler::chip
