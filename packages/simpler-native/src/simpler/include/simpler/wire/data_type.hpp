// DataType: the one-byte element-type code of a ChipTensor descriptor (WIRE.md, "DataType codes").
//
// Consumers: the TMR codec (rejects unknown codes and sizes backing checks by element width),
// the simulated chip and the tile library (element sizes), generated kernels. pypto-ir keeps its
// own DataType enum and maps it to these codes; this header is the native definition.
#pragma once

#include <cstdint>

namespace simpler {

enum class DataType : std::uint8_t {
    FLOAT32 = 0,
    FLOAT16 = 1,
    INT32 = 2,
    INT16 = 3,
    INT8 = 4,
    UINT8 = 5,
    BFLOAT16 = 6,
    INT64 = 7,
    UINT64 = 8,
    UINT16 = 9,
    UINT32 = 10,
    BOOL = 11,
    FP8E4M3FN = 12,
    FP8E8M0 = 13,
    FP4E2M1 = 14,
};

inline constexpr std::uint8_t kDataTypeCount = 15;

// Element width in bits, indexed by code. FP4E2M1 packs two elements per byte, so backing checks
// are done in bits: (start_offset + extent) * bits <= size * 8.
inline constexpr std::uint8_t kDataTypeBits[kDataTypeCount] = {
    32, 16, 32, 16, 8, 8, 16, 64, 64, 16, 32, 8, 8, 8, 4,
};

inline constexpr const char* kDataTypeNames[kDataTypeCount] = {
    "FLOAT32", "FLOAT16", "INT32",  "INT16",     "INT8",    "UINT8",   "BFLOAT16", "INT64",
    "UINT64",  "UINT16",  "UINT32", "BOOL",      "FP8E4M3FN", "FP8E8M0", "FP4E2M1",
};

static_assert(sizeof(kDataTypeBits) / sizeof(kDataTypeBits[0]) == kDataTypeCount,
              "kDataTypeBits must have one entry per DataType code");
static_assert(sizeof(kDataTypeNames) / sizeof(kDataTypeNames[0]) == kDataTypeCount,
              "kDataTypeNames must have one entry per DataType code");
static_assert(static_cast<std::uint8_t>(DataType::FP4E2M1) + 1 == kDataTypeCount,
              "the last DataType code must be kDataTypeCount - 1");
static_assert(kDataTypeBits[static_cast<int>(DataType::FLOAT32)] == 32 &&
                  kDataTypeBits[static_cast<int>(DataType::BFLOAT16)] == 16 &&
                  kDataTypeBits[static_cast<int>(DataType::INT64)] == 64 &&
                  kDataTypeBits[static_cast<int>(DataType::FP4E2M1)] == 4,
              "kDataTypeBits is out of order with the DataType codes");

inline constexpr bool is_known_dtype(std::uint8_t code) noexcept { return code < kDataTypeCount; }

// Bits per element for a known code, 0 for an unknown one.
inline constexpr std::uint32_t dtype_bits(std::uint8_t code) noexcept {
    return is_known_dtype(code) ? kDataTypeBits[code] : 0;
}

}  // namespace simpler
