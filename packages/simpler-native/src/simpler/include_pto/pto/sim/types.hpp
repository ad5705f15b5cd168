// PTO-ISA names: the enums, element types, pipes and events of the public instruction set, as
// its headers spell them (namespace pto). Written by simpler from the public ISA reference; the
// values of every enumerator and pipe constant are those of the reference.
#pragma once

#include <cstdint>
#include <type_traits>

#include "simpler/dtype.hpp"

// Address-space and function qualifiers of device code: empty on the CPU (kernels written for
// both backends use them; the official CPU backend defines them the same way).
#ifndef __gm__
#define __gm__
#endif
#ifndef __aicore__
#define __aicore__
#endif
#ifndef AICORE
#define AICORE
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __tf__
#define __tf__
#endif

#define PTO_INLINE inline
#define PTO_INST inline
#define PTO_INTERNAL inline

namespace pto {

// 16-bit floats. The official CPU backend uses the compiler's _Float16 (g++ >= 13 in C++); ours
// are simpler's storage types with round-to-nearest-even conversions (simpler/dtype.hpp),
// so g++ 12 compiles them. Arithmetic goes through float.
using half = ::simpler::half;
using bfloat16_t = ::simpler::bfloat16;
using aclFloat16 = ::simpler::half;
using float16_t = ::simpler::half;

constexpr int DYNAMIC = -1;

enum class TileType { Vec, Mat, Left, Right, Acc, Bias, Scaling, ScaleLeft, ScaleRight, Ctrl };
enum class BLayout { RowMajor = 0, ColMajor = 1 };
enum class SLayout { NoneBox = 0, RowMajor = 1, ColMajor = 2 };
enum class Layout { ND, DN, NZ };
enum class CmpMode : std::uint8_t { EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5 };
enum class RoundMode : std::uint8_t {
    CAST_NONE = 0,
    CAST_RINT = 1,   // nearest, ties to even
    CAST_ROUND = 2,  // nearest, ties away from zero
    CAST_FLOOR = 3,
    CAST_CEIL = 4,
    CAST_TRUNC = 5,
    CAST_ODD = 6,
};
enum class SaturationMode : std::uint8_t { ON = 0, OFF = 1 };
enum class PadValue : std::uint64_t { Null = 0, Zero = 1, Max = 2, Min = 3, CustomBase = 0x100000000ULL };
enum class TFillPadMode : std::uint8_t { Normal = 0, InPlace = 1, Expand = 2 };
enum class CompactMode { Null, Normal, RowPlusOne };
enum class PrintFormat : std::uint8_t { Width8_Precision4 = 0 };
enum class AccPhase : std::uint8_t { Unspecified = 0x0, Partial = 0x2, Final = 0x3 };
enum class ReluPreMode : std::uint8_t { NoRelu = 0, NormalRelu = 1 };
// How TSTORE and comm::TPUT combine with the destination: overwrite, or add element by element.
enum class AtomicType : std::uint8_t { AtomicNone = 0, AtomicAdd = 1 };

// TGATHER's mask form: which columns of every 2 or 4 it keeps (the pattern read right to left,
// the rightmost digit the first column: P0101 keeps columns 0, 2, 4, ..., P1000 columns 3, 7, ...).
enum class MaskPattern : std::uint8_t { P0101 = 1, P1010 = 2, P0001 = 3, P0010 = 4, P0100 = 5, P1000 = 6, P1111 = 7 };

// The result of every instruction (the official headers return it for event chaining).
struct RecordEvent {};

// TRANDOM's Philox-4x32 key (2 words) and 128-bit counter (4 words, word 0 the lowest), passed
// by reference as the official headers declare them: `TRandomKey k = {k0, k1};`.
constexpr int PTO_RANDOM_KEY_SIZE = 2;
constexpr int PTO_RANDOM_COUNTER_SIZE = 4;
using TRandomKey = std::uint32_t[PTO_RANDOM_KEY_SIZE];
using TRandomCounter = std::uint32_t[PTO_RANDOM_COUNTER_SIZE];

// Pipes: the official constants (PIPE_ALL is a barrier target only).
using pipe_t = int;
using event_t = int;
inline constexpr pipe_t PIPE_S = 0;
inline constexpr pipe_t PIPE_V = 1;
inline constexpr pipe_t PIPE_MTE1 = 2;
inline constexpr pipe_t PIPE_MTE2 = 3;
inline constexpr pipe_t PIPE_MTE3 = 4;
inline constexpr pipe_t PIPE_M = 5;
inline constexpr pipe_t PIPE_ALL = 6;
inline constexpr pipe_t PIPE_FIX = 7;

}  // namespace pto

// Event ids: macros, as the official CPU backend defines them.
#define EVENT_ID0 0
#define EVENT_ID1 1
#define EVENT_ID2 2
#define EVENT_ID3 3
#define EVENT_ID4 4
#define EVENT_ID5 5
#define EVENT_ID6 6
#define EVENT_ID7 7
