// Debug output from kernels on the simulated chip (TPRINT): print of a tile or a scalar.
//
// Each call writes one block to stdout in a single write (lines of concurrent kernels never
// interleave inside a block), tagged with the task and core running the kernel:
//   [task 3 AIV1] scores: Tile[16, 32] FLOAT32 Vec, valid [16, 32]
//   [[ 0.1  0.2 ...  3.1]
//    ...
//    [ 2.5  2.6 ...  7.7]]
// Tiles larger than 8 rows or columns show their first and last 3 (numpy's summary form).
// The NPU has no such channel: pypto-ir refuses pl.print for device platforms.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "simpler/kernel_abi.hpp"
#include "simpler/dtype.hpp"
#include "pto/sim/math/common.hpp"
#include "simpler/wire/data_type.hpp"

namespace pto {
namespace sim {
namespace math {
namespace detail {

inline std::string kernel_tag() {
    char buf[64];
    format_kernel_tag(buf, sizeof buf);
    return buf;
}

template <class T>
inline void append_value(std::string& out, T v) {
    char buf[48];
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
        std::snprintf(buf, sizeof buf, "%10.4g", static_cast<double>(to_compute(v)));
    } else if constexpr (std::is_signed_v<T>) {
        std::snprintf(buf, sizeof buf, "%6lld", static_cast<long long>(v));
    } else {
        std::snprintf(buf, sizeof buf, "%6llu", static_cast<unsigned long long>(v));
    }
    out += buf;
}

// Indices shown along one axis of n: all of them up to 8, else the first and last 3 (-1 marks
// the elision).
inline int shown(int n, int k) noexcept {
    if (n <= 8) return k < n ? k : -2;
    if (k < 3) return k;
    if (k == 3) return -1;
    if (k < 7) return n - 7 + k;
    return -2;
}

inline void emit(const std::string& text) noexcept {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace detail

// Print the valid region of `t`, labelled.
template <class X, std::enable_if_t<is_tile<X>::value, int> = 0>
inline void print(const char* label, const X& t) {
    using T = typename X::value_type;
    constexpr int R = X::rows, C = X::cols;
    std::string out = detail::kernel_tag();
    char head[160];
    std::snprintf(head, sizeof head, " %s: Tile[%d, %d] %s %s, valid [%d, %d]\n", label, R, C, ::simpler::kDataTypeNames[static_cast<int>(dtype_v<T>)],
                  space_name(X::space), t.valid_rows, t.valid_cols);
    out += head;
    const int vr = t.valid_rows < 0 || t.valid_rows > R ? 0 : t.valid_rows;
    const int vc = t.valid_cols < 0 || t.valid_cols > C ? 0 : t.valid_cols;
    out += "[";
    for (int i = 0;; ++i) {
        const int r = detail::shown(vr, i);
        if (r == -2) break;
        if (i > 0) out += "\n ";
        if (r == -1) {
            out += "...";
            continue;
        }
        out += "[";
        for (int j = 0;; ++j) {
            const int c = detail::shown(vc, j);
            if (c == -2) break;
            if (c == -1) {
                out += "        ...";
                continue;
            }
            detail::append_value(out, t(r, c));
        }
        out += "]";
    }
    out += "]\n";
    detail::emit(out);
}

// Print a scalar, labelled.
template <class T, std::enable_if_t<!is_tile<T>::value, int> = 0>
inline void print(const char* label, T value) {
    std::string out = detail::kernel_tag() + " " + label + ": ";
    detail::append_value(out, value);
    out += "\n";
    detail::emit(out);
}

}  // namespace math
}  // namespace sim
}  // namespace pto
