// The byte copy of TSTORE's long runs to global memory (copy_stream), where a plain memcpy is not
// the fastest way on the host. A store that misses the cache first reads the line it writes (64
// bytes read per 64 written); a non-temporal (streaming) store writes the line without reading
// it and without keeping it in the cache, as glibc's memcpy does above its own (multi-MiB)
// threshold. TSTORE uses it for dense runs of at least kStreamBytes: the 16M-element add writes
// 64 MiB that no later instruction of the program reads. A run that a later TLOAD reads back then
// comes from memory rather than the cache, so short runs keep the plain copy. The bytes written
// are the same either way; the sfence at the end orders the streaming stores before the
// instruction returns (before the task's completion is signalled to other threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pto {
namespace sim {
namespace math {

// Runs of this many bytes or more are stored with streaming stores (copy_stream).
inline constexpr std::size_t kStreamBytes = 32u << 10;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTO_SIM_MATH_STREAM 1
#else
#define PTO_SIM_MATH_STREAM 0
#endif

#if PTO_SIM_MATH_STREAM
namespace detail {
// One streaming store of a vector to a 16/32/64-byte aligned address (GCC's builtins under
// the <immintrin.h> stream intrinsics, which this header does not include; clang's generic one).
template <class V>
inline void stream_store(V* p, V v) noexcept {
#if defined(__clang__)
    __builtin_nontemporal_store(v, p);
#elif defined(__AVX512F__)
    __builtin_ia32_movntdq512(p, v);
#elif defined(__AVX__)
    __builtin_ia32_movntdq256(p, v);
#else
    __builtin_ia32_movntdq(p, v);
#endif
}
}  // namespace detail
#endif

// dst[0, n) = src[0, n) (no overlap), the bytes from the first 64-byte boundary of dst on with
// streaming stores.
inline void copy_stream(void* dst, const void* src, std::size_t n) noexcept {
#if PTO_SIM_MATH_STREAM
#if defined(__AVX512F__)
    typedef long long vec_t __attribute__((vector_size(64)));
#elif defined(__AVX__)
    typedef long long vec_t __attribute__((vector_size(32)));
#else
    typedef long long vec_t __attribute__((vector_size(16)));
#endif
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63;
    if (head > n) head = n;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        for (std::size_t o = 0; o < 64; o += sizeof(vec_t)) {
            vec_t v;
            std::memcpy(&v, s + o, sizeof v);
            detail::stream_store(reinterpret_cast<vec_t*>(d + o), v);
        }
    }
    __builtin_ia32_sfence();
    std::memcpy(d, s, n);
#else
    std::memcpy(dst, src, n);
#endif
}

}  // namespace math
}  // namespace sim
}  // namespace pto
