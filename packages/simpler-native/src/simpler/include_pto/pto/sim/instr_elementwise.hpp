// Element-wise arithmetic and bitwise instructions (tile-tile and tile-scalar). Part of our PTO-ISA
// CPU backend; pto/sim/instr.hpp describes what every instruction does.
#pragma once

#include "pto/sim/instr_support.hpp"

namespace pto {

// ---- element-wise ---------------------------------------------------------------------------

namespace sim {
template <class D, class A, class B, class F>
inline void binary(const char* name, D& dst, A& a, B& b, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec && B::Loc == TileType::Vec,
                  "vector instructions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a, b) || !covers(op, "src0", a, vr, vc) || !covers(op, "src1", b, vr, vc)) return;
    rd(op, a, vr, vc);
    rd(op, b, vr, vc);
    wr(op, dst, vr, vc);
    auto d = view(dst, vr, vc);
    math::detail::map2(name, d, view(a, vr, vc), view(b, vr, vc), f);
}
template <class D, class A, class F>
inline void unary(const char* name, D& dst, A& a, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec, "vector instructions take Vec tiles");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a) || !covers(op, "src", a, vr, vc)) return;
    rd(op, a, vr, vc);
    wr(op, dst, vr, vc);
    auto d = view(dst, vr, vc);
    math::detail::map1(name, d, view(a, vr, vc), f);
}
template <class T>
inline void require_float() noexcept {
    static_assert(math::is_float_like_v<T>, "this instruction needs a floating-point tile (float, half or bfloat16_t)");
}
template <class T>
inline void require_int() noexcept {
    static_assert(math::is_int_v<T>, "this instruction needs an integer tile");
}
}  // namespace sim

// An instruction NAME(dst, src0, src1) applying EXPR (of x and y, in C) through sim::APPLY.
#define PTO_SIM_BINARY_WITH(APPLY, NAME, EXPR)                                                                  \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>       \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                 \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                   \
        sim::APPLY(#NAME, dst, src0, src1, [](C x, C y) noexcept { return EXPR; });                              \
        return {};                                                                                               \
    }
#define PTO_SIM_BINARY(NAME, EXPR) PTO_SIM_BINARY_WITH(binary, NAME, EXPR)
#define PTO_SIM_SCALAR(NAME, EXPR)                                                                                 \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                                  \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar,             \
                              WaitEvents&... events) {                                                             \
        (void)sizeof...(events);                                                                                   \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                     \
        const C y = ::pto::sim::math::to_compute(scalar);                                                          \
        sim::unary(#NAME, dst, src0, [y](C x) noexcept { return EXPR; });                                          \
        return {};                                                                                                 \
    }

PTO_SIM_BINARY(TADD, ::pto::sim::math::detail::op_add<C>(x, y))
PTO_SIM_BINARY(TSUB, ::pto::sim::math::detail::op_sub<C>(x, y))
PTO_SIM_BINARY(TMUL, ::pto::sim::math::detail::op_mul<C>(x, y))
PTO_SIM_BINARY(TMAX, ::pto::sim::math::detail::op_max<C>(x, y))
PTO_SIM_BINARY(TMIN, ::pto::sim::math::detail::op_min<C>(x, y))
PTO_SIM_SCALAR(TADDS, ::pto::sim::math::detail::op_add<C>(x, y))
PTO_SIM_SCALAR(TSUBS, ::pto::sim::math::detail::op_sub<C>(x, y))
PTO_SIM_SCALAR(TMULS, ::pto::sim::math::detail::op_mul<C>(x, y))
PTO_SIM_SCALAR(TMAXS, ::pto::sim::math::detail::op_max<C>(x, y))
PTO_SIM_SCALAR(TMINS, ::pto::sim::math::detail::op_min<C>(x, y))

// TPARTADD / TPARTMUL / TPARTMAX / TPARTMIN(dst, src0, src1): over dst's valid shape, the op of
// both sources where both are valid there, the one source's element where only it is, 0 where
// neither is (the official CPU backend's rule: sources of different valid shapes combine).
namespace sim {
template <class D, class A, class B, class F>
inline void part(const char* name, D& dst, A& a, B& b, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec && B::Loc == TileType::Vec,
                  "vector instructions take Vec tiles");
    using T = typename D::DType;
    static_assert(std::is_same<T, typename A::DType>::value && std::is_same<T, typename B::DType>::value,
                  "partial instructions take one element type");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a, b)) return;
    const int ar = vrow(a) < vr ? vrow(a) : vr, ac = vcol(a) < vc ? vcol(a) : vc;
    const int br = vrow(b) < vr ? vrow(b) : vr, bc = vcol(b) < vc ? vcol(b) : vc;
    rd(op, a, ar, ac);
    rd(op, b, br, bc);
    wr(op, dst, vr, vc);
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c) {
            const bool in_a = r < ar && c < ac, in_b = r < br && c < bc;
            const T x = in_a ? a.data()[r * A::Cols + c] : T(0);
            const T y = in_b ? b.data()[r * B::Cols + c] : T(0);
            dst.data()[r * D::Cols + c] =
                in_a && in_b ? math::from_compute<T>(f(math::to_compute(x), math::to_compute(y))) : in_a ? x : y;
        }
}
}  // namespace sim
PTO_SIM_BINARY_WITH(part, TPARTADD, ::pto::sim::math::detail::op_add<C>(x, y))
PTO_SIM_BINARY_WITH(part, TPARTMUL, ::pto::sim::math::detail::op_mul<C>(x, y))
PTO_SIM_BINARY_WITH(part, TPARTMAX, ::pto::sim::math::detail::op_max<C>(x, y))
PTO_SIM_BINARY_WITH(part, TPARTMIN, ::pto::sim::math::detail::op_min<C>(x, y))

// TADDC / TSUBC(dst, src0, src1, src2): src0 + src1 + src2 and src0 - src1 + src2; TADDSC /
// TSUBSC(dst, src0, scalar, src1): src0 + scalar + src1 and src0 - scalar + src1 (the ISA pages;
// left to right, in the compute type, rounded once for 16-bit floats, wrapping for integers).
namespace sim {
template <class D, class A, class B, class E, class F>
inline void ternary(const char* name, D& dst, A& a, B& b, E& e, F f) noexcept {
    static_assert(D::Loc == TileType::Vec && A::Loc == TileType::Vec && B::Loc == TileType::Vec &&
                      E::Loc == TileType::Vec,
                  "vector instructions take Vec tiles");
    using T = typename D::DType;
    static_assert(std::is_same<T, typename A::DType>::value && std::is_same<T, typename B::DType>::value &&
                      std::is_same<T, typename E::DType>::value,
                  "three-operand instructions take one element type");
    Op op(name, PIPE_V);
    const int vr = vrow(dst), vc = vcol(dst);
    if (!all_placed(op, dst, a, b, e) || !covers(op, "src0", a, vr, vc) || !covers(op, "src1", b, vr, vc) ||
        !covers(op, "src2", e, vr, vc))
        return;
    rd(op, a, vr, vc);
    rd(op, b, vr, vc);
    rd(op, e, vr, vc);
    wr(op, dst, vr, vc);
    for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c)
            dst.data()[r * D::Cols + c] = math::from_compute<T>(f(math::to_compute(a.data()[r * A::Cols + c]),
                                                                  math::to_compute(b.data()[r * B::Cols + c]),
                                                                  math::to_compute(e.data()[r * E::Cols + c])));
}
}  // namespace sim
#define PTO_SIM_TERNARY(NAME, EXPR)                                                                              \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename TileDataSrc2,          \
              typename... WaitEvents>                                                                             \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataSrc2& src2,       \
                              WaitEvents&... events) {                                                            \
        (void)sizeof...(events);                                                                                  \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                    \
        namespace d = ::pto::sim::math::detail;                                                                   \
        sim::ternary(#NAME, dst, src0, src1, src2, [](C x, C y, C z) noexcept { return EXPR; });                  \
        return {};                                                                                                \
    }
// The scalar forms: NAME(dst, src0, scalar, src1), EXPR of x (src0), y (the scalar) and z (src1).
#define PTO_SIM_TERNARY_SCALAR(NAME, EXPR)                                                                       \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, typename TileDataSrc0::DType scalar,          \
                              TileDataSrc1& src1, WaitEvents&... events) {                                        \
        (void)sizeof...(events);                                                                                  \
        using C = sim::compute_t<typename TileDataDst::DType>;                                                    \
        namespace d = ::pto::sim::math::detail;                                                                   \
        const C y = ::pto::sim::math::to_compute(scalar);                                                         \
        sim::ternary(#NAME, dst, src0, src1, src1, [y](C x, C z, C) noexcept { return EXPR; });                   \
        return {};                                                                                                \
    }
PTO_SIM_TERNARY(TADDC, d::op_add<C>(d::op_add<C>(x, y), z))
PTO_SIM_TERNARY(TSUBC, d::op_add<C>(d::op_sub<C>(x, y), z))
PTO_SIM_TERNARY_SCALAR(TADDSC, d::op_add<C>(d::op_add<C>(x, y), z))
PTO_SIM_TERNARY_SCALAR(TSUBSC, d::op_add<C>(d::op_sub<C>(x, y), z))
#undef PTO_SIM_TERNARY
#undef PTO_SIM_TERNARY_SCALAR

// TDIV / TDIVS: integer division by zero gives 0 and is reported.
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1,
          typename... WaitEvents>
PTO_INST RecordEvent TDIV(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    bool zero = false;
    sim::binary("TDIV", dst, src0, src1, [&zero](C x, C y) noexcept { return ::pto::sim::math::detail::op_div<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIV: integer division by zero (result set to 0)");
    return {};
}
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TDIVS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    const C y = ::pto::sim::math::to_compute(scalar);
    bool zero = false;
    sim::unary("TDIVS", dst, src0, [y, &zero](C x) noexcept { return ::pto::sim::math::detail::op_div<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIVS: integer division by zero (result set to 0)");
    return {};
}
// TDIVS(dst, scalar, src): dst = scalar / src.
template <auto PrecisionType = DivAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TDIVS(TileDataDst& dst, typename TileDataDst::DType scalar, TileDataSrc& src0,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    const C y = ::pto::sim::math::to_compute(scalar);
    bool zero = false;
    sim::unary("TDIVS", dst, src0, [y, &zero](C x) noexcept { return ::pto::sim::math::detail::op_div<C>(y, x, &zero); });
    if (zero) ::simpler::report_kernel_error("TDIVS: integer division by zero (result set to 0)");
    return {};
}

#define PTO_SIM_UNARY_F(NAME, ALG, EXPR)                                                             \
    template <auto PrecisionType = ALG::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents> \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {           \
        (void)sizeof...(events);                                                                     \
        sim::require_float<typename TileDataDst::DType>();                                           \
        sim::unary(#NAME, dst, src, [](float x) noexcept { return EXPR; });                          \
        return {};                                                                                   \
    }
// TEXP: exp in float within 1 ulp, the same bits on every host (math/exp.hpp), eight float
// elements at a time where the target allows.
template <auto PrecisionType = ExpAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TEXP(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    sim::unary("TEXP", dst, src, ::pto::sim::math::detail::ExpFn{});
    return {};
}
// log, sqrt and rsqrt are evaluated in double and rounded once to float (as the official CPU
// backend does; sqrt is correctly rounded either way).
PTO_SIM_UNARY_F(TLOG, LogAlgorithm, static_cast<float>(std::log(static_cast<double>(x))))
PTO_SIM_UNARY_F(TSQRT, SqrtAlgorithm, std::sqrt(x))
PTO_SIM_UNARY_F(TRSQRT, RsqrtAlgorithm, static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))))
PTO_SIM_UNARY_F(TRECIP, RecipAlgorithm, 1.0f / x)
#undef PTO_SIM_UNARY_F

template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TABS(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TABS", dst, src, [](C x) noexcept {
        if constexpr (std::is_floating_point<C>::value)
            return std::fabs(x);
        else
            return x < C(0) ? ::pto::sim::math::detail::op_sub<C>(C(0), x) : x;
    });
    return {};
}
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TNEG(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TNEG", dst, src, [](C x) noexcept {
        if constexpr (std::is_floating_point<C>::value)
            return -x;
        else
            return ::pto::sim::math::detail::op_sub<C>(C(0), x);
    });
    return {};
}
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TRELU(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using C = sim::compute_t<typename TileDataDst::DType>;
    sim::unary("TRELU", dst, src, [](C x) noexcept { return x < C(0) ? C(0) : x; });
    return {};
}
// TLRELU(dst, src, slope): x > 0 ? x : slope * x.
template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TLRELU(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    const float s = static_cast<float>(::pto::sim::math::to_compute(scalar));
    sim::unary("TLRELU", dst, src, [s](float x) noexcept { return x > 0.0f ? x : x * s; });
    return {};
}
// TPRELU(dst, src0, slope, tmp): x > 0 ? x : slope[r, c] * x. tmp is not used.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename TileDataTmp,
          typename... WaitEvents>
PTO_INST RecordEvent TPRELU(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp& tmp,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    sim::require_float<typename TileDataDst::DType>();
    sim::binary("TPRELU", dst, src0, src1, [](float x, float s) noexcept { return x > 0.0f ? x : x * s; });
    return {};
}
// TFMOD / TFMODS: C's fmod (the sign of the dividend), floating-point tiles.
template <auto PrecisionType = FmodAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0,
          typename TileDataSrc1, typename... WaitEvents>
PTO_INST RecordEvent TFMOD(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    sim::binary("TFMOD", dst, src0, src1, [](float x, float y) noexcept { return std::fmod(x, y); });
    return {};
}
template <auto PrecisionType = FmodSAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc,
          typename... WaitEvents>
PTO_INST RecordEvent TFMODS(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                            WaitEvents&... events) {
    (void)sizeof...(events);
    sim::require_float<typename TileDataDst::DType>();
    const float y = static_cast<float>(::pto::sim::math::to_compute(scalar));
    sim::unary("TFMODS", dst, src, [y](float x) noexcept { return std::fmod(x, y); });
    return {};
}
// TREM / TREMS: the remainder with the sign of the divisor (Python's %, torch.remainder): C's
// fmod or %, plus the divisor when that is nonzero and the operands' signs differ, as the
// official CPU backend. Integer division by zero gives 0 and is reported (floats: NaN). tmp is
// not used.
namespace sim {
template <class C>
inline C rem(C x, C y, bool* zero) noexcept {
    C r;
    if constexpr (std::is_integral<C>::value) {
        if (y == 0) {
            *zero = true;
            return C(0);
        }
        r = std::is_signed<C>::value && y == C(-1) ? C(0) : static_cast<C>(x % y);  // no INT_MIN % -1 trap
    } else {
        r = static_cast<C>(std::fmod(x, y));
    }
    if (r != C(0) && ((x >= C(0)) != (y >= C(0)))) r = static_cast<C>(r + y);
    return r;
}
}  // namespace sim
template <auto PrecisionType = RemAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc0,
          typename TileDataSrc1, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TREM(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp& tmp,
                          WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using C = sim::compute_t<typename TileDataDst::DType>;
    bool zero = false;
    sim::binary("TREM", dst, src0, src1, [&zero](C x, C y) noexcept { return sim::rem<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TREM: integer division by zero (result set to 0)");
    return {};
}
template <auto PrecisionType = RemSAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc,
          typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TREMS(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar, TileDataTmp& tmp,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using C = sim::compute_t<typename TileDataDst::DType>;
    const C y = ::pto::sim::math::to_compute(scalar);
    bool zero = false;
    sim::unary("TREMS", dst, src, [y, &zero](C x) noexcept { return sim::rem<C>(x, y, &zero); });
    if (zero) ::simpler::report_kernel_error("TREMS: integer division by zero (result set to 0)");
    return {};
}

// ---- bitwise (integer tiles) ---------------------------------------------------------------

namespace sim {
template <class T>
inline T shl(T x, T n, bool* bad) noexcept {
    return math::detail::shift_left<T>(x, n, bad);
}
template <class T>
inline T shr(T x, T n, bool* bad) noexcept {
    return math::detail::shift_right<T>(x, n, bad);
}
}  // namespace sim

#define PTO_SIM_BITWISE(NAME, EXPR)                                                                              \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        sim::binary(#NAME, dst, src0, src1, [](T x, T y) noexcept { return static_cast<T>(EXPR); });             \
        return {};                                                                                                \
    }
PTO_SIM_BITWISE(TAND, x & y)
PTO_SIM_BITWISE(TOR, x | y)
#undef PTO_SIM_BITWISE

// TXOR(dst, src0, src1, tmp): tmp is not used.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename TileDataTmp,
          typename... WaitEvents>
PTO_INST RecordEvent TXOR(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp& tmp,
                          WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    sim::binary("TXOR", dst, src0, src1, [](T x, T y) noexcept { return static_cast<T>(x ^ y); });
    return {};
}

#define PTO_SIM_BITWISE_S(NAME, EXPR)                                                                          \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                              \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc& src, typename TileDataDst::DType scalar,          \
                              WaitEvents&... events) {                                                         \
        (void)sizeof...(events);                                                                               \
        using T = typename TileDataDst::DType;                                                                 \
        sim::require_int<T>();                                                                                 \
        const T y = scalar;                                                                                    \
        sim::unary(#NAME, dst, src, [y](T x) noexcept { return static_cast<T>(EXPR); });                       \
        return {};                                                                                             \
    }
PTO_SIM_BITWISE_S(TANDS, x & y)
PTO_SIM_BITWISE_S(TORS, x | y)
#undef PTO_SIM_BITWISE_S

// TXORS(dst, src, scalar, tmp): tmp is not used.
template <typename TileDataDst, typename TileDataSrc, typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TXORS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar, TileDataTmp& tmp,
                           WaitEvents&... events) {
    (void)sizeof...(events);
    (void)tmp;
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    const T y = scalar;
    sim::unary("TXORS", dst, src0, [y](T x) noexcept { return static_cast<T>(x ^ y); });
    return {};
}

template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>
PTO_INST RecordEvent TNOT(TileDataDst& dst, TileDataSrc& src, WaitEvents&... events) {
    (void)sizeof...(events);
    using T = typename TileDataDst::DType;
    sim::require_int<T>();
    sim::unary("TNOT", dst, src, [](T x) noexcept { return static_cast<T>(~x); });
    return {};
}

// Shifts: a shift amount outside [0, bits) is reported and that element becomes 0; TSHR is
// arithmetic for signed types, logical for unsigned.
#define PTO_SIM_SHIFT(NAME, SNAME, FN)                                                                           \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, typename... WaitEvents>        \
    PTO_INST RecordEvent NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, WaitEvents&... events) { \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        bool bad = false;                                                                                         \
        sim::binary(#NAME, dst, src0, src1, [&bad](T x, T n) noexcept { return FN<T>(x, n, &bad); });             \
        if (bad) ::simpler::report_kernel_error(#NAME ": shift amount outside [0, %d) (element set to 0)",       \
                                                static_cast<int>(sizeof(T) * 8));                                 \
        return {};                                                                                                \
    }                                                                                                             \
    template <typename TileDataDst, typename TileDataSrc, typename... WaitEvents>                                 \
    PTO_INST RecordEvent SNAME(TileDataDst& dst, TileDataSrc& src, typename TileDataDst::DType scalar,            \
                               WaitEvents&... events) {                                                           \
        (void)sizeof...(events);                                                                                  \
        using T = typename TileDataDst::DType;                                                                    \
        sim::require_int<T>();                                                                                    \
        bool bad = false;                                                                                         \
        const T n = scalar;                                                                                       \
        sim::unary(#SNAME, dst, src, [n, &bad](T x) noexcept { return FN<T>(x, n, &bad); });                      \
        if (bad) ::simpler::report_kernel_error(#SNAME ": shift amount outside [0, %d) (element set to 0)",      \
                                                static_cast<int>(sizeof(T) * 8));                                 \
        return {};                                                                                                \
    }
PTO_SIM_SHIFT(TSHL, TSHLS, sim::shl)
PTO_SIM_SHIFT(TSHR, TSHRS, sim::shr)
#undef PTO_SIM_SHIFT

#undef PTO_SIM_BINARY
#undef PTO_SIM_SCALAR

}  // namespace pto
