// PTO-ISA data types: Shape, Stride, GlobalTensor (a view of global memory) and Tile (a block of
// a core's on-chip buffer), with the template parameters, defaults and member names of the
// public ISA headers, and TASSIGN, which places a tile in the running core's buffer.
//
// Storage: whatever its BLayout/SLayout, our backend keeps a tile's logical [Rows, Cols] matrix
// row-major at its address (element (r, c) at byte offset (r * Cols + c) * sizeof(T)); the
// footprint is the same Rows * Cols * sizeof(T) bytes. Only GetValue/SetValue see the layout:
// their offset is interpreted in the tile's BLayout (ColMajor: offset = c * Rows + r).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pto/sim/core.hpp"
#include "pto/sim/types.hpp"

namespace pto {

namespace GlobalTensorDim {
inline constexpr int DIM_0 = 0, DIM_1 = 1, DIM_2 = 2, DIM_3 = 3, DIM_4 = 4, TOTAL_DIM = 5;
}

namespace sim {
// The 5 dims of a Shape or Stride with static dims S...: fill() sets the dynamic entries of
// `out` from `vals`, in order (1 past the values given), the static ones to their value. Which
// entry of `vals` each dim takes is decided at compile time (a GlobalTensor is built per TLOAD
// and TSTORE: a loop over the dims cost ~50 instructions a view).
template <std::int64_t... S>
struct DynamicDims {
    static constexpr std::int64_t stat[5] = {S...};
    static constexpr int before(int i) noexcept {  // dynamic dims before dim i
        int k = 0;
        for (int j = 0; j < i; ++j) k += stat[j] == DYNAMIC ? 1 : 0;
        return k;
    }
    template <int I, std::size_t N>
    static std::int64_t value(const std::int64_t (&vals)[N]) noexcept {
        if constexpr (stat[I] != DYNAMIC)
            return stat[I];
        else if constexpr (before(I) < static_cast<int>(N))
            return vals[before(I)];
        else
            return 1;
    }
    template <std::size_t N>
    static void fill(std::int64_t* out, const std::int64_t (&vals)[N]) noexcept {
        out[0] = value<0>(vals);
        out[1] = value<1>(vals);
        out[2] = value<2>(vals);
        out[3] = value<3>(vals);
        out[4] = value<4>(vals);
    }
};
template <std::int64_t... N>
constexpr int count_dynamic() noexcept {
    return ((N == DYNAMIC ? 1 : 0) + ...);
}
}  // namespace sim

// Shape<N1..N5>: a global tensor's 5-D shape; DYNAMIC entries are given to the constructor. The
// 5-argument constructor takes every dim (static ones ignored); a k-argument one (k < 5) takes
// exactly the k dynamic dims in order.
template <std::int64_t N1 = DYNAMIC, std::int64_t N2 = DYNAMIC, std::int64_t N3 = DYNAMIC, std::int64_t N4 = DYNAMIC,
          std::int64_t N5 = DYNAMIC>
struct Shape {
    static constexpr std::int64_t staticShape[5] = {N1, N2, N3, N4, N5};
    std::int64_t shape[5] = {1, 1, 1, 1, 1};

    Shape() noexcept { sim::DynamicDims<N1, N2, N3, N4, N5>::fill(shape, {std::int64_t{1}}); }
    Shape(std::int64_t n1, std::int64_t n2, std::int64_t n3, std::int64_t n4, std::int64_t n5) noexcept {
        const std::int64_t v[5] = {n1, n2, n3, n4, n5};
        for (int i = 0; i < 5; ++i) shape[i] = staticShape[i] == DYNAMIC ? v[i] : staticShape[i];
    }
    Shape(std::int64_t n) noexcept {  // NOLINT: implicit as upstream
        static_assert(sim::count_dynamic<N1, N2, N3, N4, N5>() == 1, "1-parameter Shape needs exactly 1 dynamic dim");
        sim::DynamicDims<N1, N2, N3, N4, N5>::fill(shape, {n});
    }
    Shape(std::int64_t n1, std::int64_t n2) noexcept {
        static_assert(sim::count_dynamic<N1, N2, N3, N4, N5>() == 2, "2-parameter Shape needs exactly 2 dynamic dims");
        sim::DynamicDims<N1, N2, N3, N4, N5>::fill(shape, {n1, n2});
    }
    Shape(std::int64_t n1, std::int64_t n2, std::int64_t n3) noexcept {
        static_assert(sim::count_dynamic<N1, N2, N3, N4, N5>() == 3, "3-parameter Shape needs exactly 3 dynamic dims");
        sim::DynamicDims<N1, N2, N3, N4, N5>::fill(shape, {n1, n2, n3});
    }
    Shape(std::int64_t n1, std::int64_t n2, std::int64_t n3, std::int64_t n4) noexcept {
        static_assert(sim::count_dynamic<N1, N2, N3, N4, N5>() == 4, "4-parameter Shape needs exactly 4 dynamic dims");
        sim::DynamicDims<N1, N2, N3, N4, N5>::fill(shape, {n1, n2, n3, n4});
    }
};

// Stride<S1..S5>: element strides of the 5 dims, same constructor rules as Shape.
template <std::int64_t S1 = DYNAMIC, std::int64_t S2 = DYNAMIC, std::int64_t S3 = DYNAMIC, std::int64_t S4 = DYNAMIC,
          std::int64_t S5 = DYNAMIC>
struct Stride {
    static constexpr std::int64_t staticStride[5] = {S1, S2, S3, S4, S5};
    std::int64_t stride[5] = {1, 1, 1, 1, 1};

    Stride() noexcept { sim::DynamicDims<S1, S2, S3, S4, S5>::fill(stride, {std::int64_t{1}}); }
    Stride(std::int64_t n1, std::int64_t n2, std::int64_t n3, std::int64_t n4, std::int64_t n5) noexcept {
        const std::int64_t v[5] = {n1, n2, n3, n4, n5};
        for (int i = 0; i < 5; ++i) stride[i] = staticStride[i] == DYNAMIC ? v[i] : staticStride[i];
    }
    Stride(std::int64_t n) noexcept {  // NOLINT: implicit as upstream
        static_assert(sim::count_dynamic<S1, S2, S3, S4, S5>() == 1, "1-parameter Stride needs exactly 1 dynamic dim");
        sim::DynamicDims<S1, S2, S3, S4, S5>::fill(stride, {n});
    }
    Stride(std::int64_t n1, std::int64_t n2) noexcept {
        static_assert(sim::count_dynamic<S1, S2, S3, S4, S5>() == 2, "2-parameter Stride needs exactly 2 dynamic dims");
        sim::DynamicDims<S1, S2, S3, S4, S5>::fill(stride, {n1, n2});
    }
    Stride(std::int64_t n1, std::int64_t n2, std::int64_t n3) noexcept {
        static_assert(sim::count_dynamic<S1, S2, S3, S4, S5>() == 3, "3-parameter Stride needs exactly 3 dynamic dims");
        sim::DynamicDims<S1, S2, S3, S4, S5>::fill(stride, {n1, n2, n3});
    }
    Stride(std::int64_t n1, std::int64_t n2, std::int64_t n3, std::int64_t n4) noexcept {
        static_assert(sim::count_dynamic<S1, S2, S3, S4, S5>() == 4, "4-parameter Stride needs exactly 4 dynamic dims");
        sim::DynamicDims<S1, S2, S3, S4, S5>::fill(stride, {n1, n2, n3, n4});
    }
};

// GlobalTensor: a 5-D view of global memory. The last two dims are the rows and columns a tile
// transfers; the leading three are walked by TLOAD/TSTORE as more rows (dst valid rows =
// product of dims 0..3).
template <typename Element_, typename Shape_, typename Stride_, Layout Layout_ = Layout::ND>
struct GlobalTensor {
    using Shape = Shape_;
    using Stride = Stride_;
    using RawDType = std::remove_cv_t<Element_>;
    using DType = RawDType;
    static constexpr Layout layout = Layout_;
    static constexpr std::int64_t staticShape[5] = {Shape_::staticShape[0], Shape_::staticShape[1],
                                                    Shape_::staticShape[2], Shape_::staticShape[3],
                                                    Shape_::staticShape[4]};
    static constexpr std::int64_t staticStride[5] = {Stride_::staticStride[0], Stride_::staticStride[1],
                                                     Stride_::staticStride[2], Stride_::staticStride[3],
                                                     Stride_::staticStride[4]};

    GlobalTensor() noexcept : data_(nullptr) {}
    GlobalTensor(DType* data, const Shape& shape = Shape(), const Stride& stride = Stride()) noexcept  // NOLINT: implicit as upstream
        : data_(data), shape_(shape), stride_(stride) {}

    std::int64_t GetShape(const int dim) const noexcept { return dim >= 0 && dim < 5 ? shape_.shape[dim] : -1; }
    std::int64_t GetStride(const int dim) const noexcept { return dim >= 0 && dim < 5 ? stride_.stride[dim] : -1; }
    template <int dim>
    static constexpr std::int64_t GetShape() noexcept {
        static_assert(dim >= 0 && dim < 5 && staticShape[dim] != DYNAMIC, "static dim 0..4 only");
        return staticShape[dim];
    }
    template <int dim>
    static constexpr std::int64_t GetStride() noexcept {
        static_assert(dim >= 0 && dim < 5 && staticStride[dim] != DYNAMIC, "static dim 0..4 only");
        return staticStride[dim];
    }
    DType* data() noexcept { return data_; }
    const DType* data() const noexcept { return data_; }
    void SetAddr(DType* addr) noexcept { data_ = addr; }

private:
    DType* data_;
    Shape shape_;
    Stride stride_;
};

namespace TileConfig {
inline constexpr int alignedSize = 32;
inline constexpr int fractalABSize = 512;
inline constexpr int fractalCSize = 1024;
inline constexpr int fractalMxSize = 32;
}  // namespace TileConfig

namespace sim {
template <class T>
constexpr const char* dtype_name() noexcept {
    return ::simpler::kDataTypeNames[static_cast<int>(::simpler::dtype_v<T>)];
}
}  // namespace sim

template <TileType Loc_, typename Element_, const int Rows_, const int Cols_, const BLayout BFractal_ = BLayout::RowMajor,
          const int RowValid_ = Rows_, const int ColValid_ = Cols_, const SLayout SFractal_ = SLayout::NoneBox,
          const int SFractalSize_ = TileConfig::fractalABSize, auto PadVal_ = PadValue::Null,
          const CompactMode Compact_ = CompactMode::Null>
struct Tile {
    using DType = Element_;
    using TileDType = DType*;
    static constexpr TileType Loc = Loc_;
    static constexpr int Rows = Rows_;
    static constexpr int Cols = Cols_;
    static constexpr int ValidRow = RowValid_;
    static constexpr int ValidCol = ColValid_;
    static constexpr BLayout BFractal = BFractal_;
    static constexpr SLayout SFractal = SFractal_;
    static constexpr int Numel = Rows * Cols;
    static constexpr bool isRowMajor = BFractal_ == BLayout::RowMajor;
    static constexpr int RowStride = isRowMajor ? Cols : 1;
    static constexpr int ColStride = isRowMajor ? 1 : Rows;
    static constexpr int SFractalSize = SFractalSize_;
    static constexpr auto PadVal = PadVal_;
    static constexpr CompactMode Compact = Compact_;
    static constexpr bool isBoxedLayout = SFractal_ != SLayout::NoneBox;

    static_assert(Rows_ > 0 && Cols_ > 0, "a tile needs positive static extents");
    static_assert(sim::buffer_of(Loc_) < sim::kBufs, "our backend implements Vec, Mat, Left, Right, Acc and Bias tiles");
    static_assert((RowValid_ == DYNAMIC || (RowValid_ >= 0 && RowValid_ <= Rows_)) &&
                      (ColValid_ == DYNAMIC || (ColValid_ >= 0 && ColValid_ <= Cols_)),
                  "static valid shape must lie inside [Rows, Cols]");
    // The ISA's alignment rule for non-fractal tiles: a RowMajor row (ColMajor column) is a
    // whole number of 32-byte blocks.
    static_assert(SFractal_ != SLayout::NoneBox ||
                      (BFractal_ == BLayout::RowMajor ? (Cols_ * sizeof(Element_)) % TileConfig::alignedSize == 0
                                                      : (Rows_ * sizeof(Element_)) % TileConfig::alignedSize == 0),
                  "BFractal_ is RowMajor and SFractal_ is NoneBox: Cols * sizeof(T) must be a multiple of 32 bytes; "
                  "BFractal_ is ColMajor and SFractal_ is NoneBox: Rows * sizeof(T) must be a multiple of 32 bytes");
    static_assert(SFractalSize_ == TileConfig::fractalABSize || SFractalSize_ == TileConfig::fractalCSize ||
                      SFractalSize_ == TileConfig::fractalMxSize,
                  "SFractalSize_ illegal");

    Tile() noexcept = default;

    template <int RowMask = ValidRow, int ColMask = ValidCol>
    Tile(std::enable_if_t<RowMask == DYNAMIC && ColMask == DYNAMIC, unsigned> vr,
         std::enable_if_t<RowMask == DYNAMIC && ColMask == DYNAMIC, unsigned> vc) noexcept {
        SetValidShape(vr, vc);
    }
    template <int RowMask = ValidRow, int ColMask = ValidCol>
    Tile(std::enable_if_t<(RowMask == DYNAMIC) && (ColMask >= 0), unsigned> vr) noexcept {  // NOLINT: implicit as upstream
        SetValidRow(vr);
    }
    template <int RowMask = ValidRow, int ColMask = ValidCol>
    Tile(std::enable_if_t<(RowMask >= 0) && (ColMask == DYNAMIC), unsigned> vc) noexcept {  // NOLINT: implicit as upstream
        SetValidCol(vc);
    }

    unsigned GetValidRow() const noexcept { return row_; }
    unsigned GetValidCol() const noexcept { return col_; }

    void SetValidRow(unsigned r) noexcept {
        static_assert(ValidRow == DYNAMIC, "Only Dynamic Valid Row Support Set Value.");
        if (r > static_cast<unsigned>(Rows)) {
            ::simpler::report_kernel_error("SetValidRow: valid rows %u exceed the tile's Rows %d", r, Rows);
            return;
        }
        row_ = r;
    }
    void SetValidCol(unsigned c) noexcept {
        static_assert(ValidCol == DYNAMIC, "Only Dynamic Valid Col Support Set Value.");
        if (c > static_cast<unsigned>(Cols)) {
            ::simpler::report_kernel_error("SetValidCol: valid cols %u exceed the tile's Cols %d", c, Cols);
            return;
        }
        col_ = c;
    }
    void SetValidShape(unsigned r, unsigned c) noexcept {
        static_assert(ValidCol == DYNAMIC && ValidRow == DYNAMIC, "Only Dynamic Valid Shape Support Set Value.");
        if (r > static_cast<unsigned>(Rows) || c > static_cast<unsigned>(Cols)) {
            ::simpler::report_kernel_error("SetValidShape: valid shape [%u, %u] exceeds the tile's [%d, %d]", r, c,
                                           Rows, Cols);
            return;
        }
        row_ = r;
        col_ = c;
    }

    TileDType& data() noexcept { return data_; }
    const TileDType& data() const noexcept { return data_; }

    static constexpr std::size_t GetSizeInBytes() noexcept { return sizeof(DType) * Numel; }

    // Scalar element access (PIPE_S). `offset` is in elements, in the tile's BLayout.
    // The checks see a scalar access as one of the tile's whole valid region (so that a loop
    // over the elements costs one check, not one per element).
    void SetValue(const std::uint32_t offset, const DType val) noexcept {
        const int at = element(offset, "SetValue");
        if (at < 0) return;
        std::uint32_t lo, hi;
        valid_range(&lo, &hi);
        sim::hold(id_);
        sim::scalar_access("SetValue", buf(), lo, hi, id_, true);
        data_[at] = val;
    }
    DType GetValue(const std::uint32_t offset) noexcept {
        const int at = element(offset, "GetValue");
        if (at < 0) return DType{};
        std::uint32_t lo, hi;
        valid_range(&lo, &hi);
        sim::hold(id_);
        sim::scalar_access("GetValue", buf(), lo, hi, id_, false);
        return data_[at];
    }

    // Our backend's bookkeeping (not ISA API): where TASSIGN put the tile.
    static constexpr int buf() noexcept { return sim::buffer_of(Loc_); }
    std::uint32_t sim_offset() const noexcept { return offset_; }
    std::uint32_t sim_id() const noexcept { return id_; }
    void sim_place(DType* p, std::uint32_t offset, std::uint32_t id) noexcept {
        data_ = p;
        offset_ = offset;
        id_ = id;
    }

private:
    // Bytes from the first to the last element of the valid region (row-major storage).
    void valid_range(std::uint32_t* lo, std::uint32_t* hi) const noexcept {
        *lo = offset_;
        *hi = row_ == 0 || col_ == 0 ? offset_ : offset_ + ((row_ - 1) * Cols + col_) * sizeof(DType);
    }

    int element(std::uint32_t offset, const char* op) const noexcept {
        if (data_ == nullptr) {
            ::simpler::report_kernel_error("%s on a %s tile that TASSIGN has not placed", op, sim::tile_type_name(Loc_));
            return -1;
        }
        if (offset >= static_cast<std::uint32_t>(Numel)) {
            ::simpler::report_kernel_error("%s: offset %u outside the tile's %d elements", op, offset, Numel);
            return -1;
        }
        if (isRowMajor) return static_cast<int>(offset);
        const int r = static_cast<int>(offset % Rows), c = static_cast<int>(offset / Rows);
        return r * Cols + c;
    }

    DType* data_ = nullptr;
    unsigned row_ = ValidRow == DYNAMIC ? static_cast<unsigned>(Rows) : static_cast<unsigned>(ValidRow);
    unsigned col_ = ValidCol == DYNAMIC ? static_cast<unsigned>(Cols) : static_cast<unsigned>(ValidCol);
    std::uint32_t offset_ = 0;
    std::uint32_t id_ = 0;
};

// The cube operand aliases of the official headers (their CPU-simulation forms).
template <typename Element_, const int Rows_, const int Cols_, const int RowValid_ = Rows_, const int ColValid_ = Cols_>
using TileLeft = Tile<TileType::Left, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_, SLayout::RowMajor,
                      TileConfig::fractalABSize>;
template <typename Element_, const int Rows_, const int Cols_, const int RowValid_ = Rows_, const int ColValid_ = Cols_>
using TileRight = Tile<TileType::Right, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                       SLayout::ColMajor, TileConfig::fractalABSize>;
template <typename Element_, const int Rows_, const int Cols_, const int RowValid_ = Rows_, const int ColValid_ = Cols_>
using TileAcc = Tile<TileType::Acc, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_, SLayout::RowMajor,
                     TileConfig::fractalCSize>;

template <typename T>
struct is_tile : std::false_type {};
template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int SZ, auto P, CompactMode CM>
struct is_tile<Tile<L, E, R, C, B, VR, VC, S, SZ, P, CM>> : std::true_type {};
template <typename T>
constexpr bool is_tile_data_v = is_tile<std::remove_cv_t<T>>::value;

template <typename T>
struct is_global : std::false_type {};
template <typename E, typename S, typename St, Layout L>
struct is_global<GlobalTensor<E, S, St, L>> : std::true_type {};
template <typename T>
constexpr bool is_global_data_v = is_global<std::remove_cv_t<T>>::value;

namespace sim {
// Where the ISA stores element (r, c) of a tile, in elements from the tile's start (the layout
// rules of the ISA's Tile: a non-boxed tile is row- or column-major by BLayout; a boxed one is a
// grid of InnerRows x InnerCols boxes, the grid ordered by BLayout and each box by SLayout: NZ
// (ColMajor/RowMajor), ZN (RowMajor/ColMajor), ZZ (RowMajor/RowMajor)). Our backend keeps every
// tile row-major whatever its layout; the ISA's placement matters where the same bytes are read
// through two tiles of different layouts (TRESHAPE: an NZ [R, C] Mat tile read as a ZN [C, R]
// one is its transpose).
template <class TileT>
constexpr int inner_rows() noexcept {
    if constexpr (TileT::SFractal == SLayout::NoneBox) return 1;
    else if constexpr (TileT::SFractalSize == TileConfig::fractalCSize) return 16;
    else return TileT::SFractal == SLayout::RowMajor ? 16 : TileConfig::alignedSize / int(sizeof(typename TileT::DType));
}
template <class TileT>
constexpr int inner_cols() noexcept {
    if constexpr (TileT::SFractal == SLayout::NoneBox) return 1;
    else if constexpr (TileT::SFractalSize == TileConfig::fractalCSize) return 16;
    else return TileT::SFractal == SLayout::RowMajor ? TileConfig::alignedSize / int(sizeof(typename TileT::DType)) : 16;
}

// Whether the ISA stores the tile as we do (row-major, or a single row or column).
template <class TileT>
constexpr bool plain_layout() noexcept {
    return TileT::SFractal == SLayout::NoneBox && (TileT::isRowMajor || TileT::Rows == 1 || TileT::Cols == 1);
}

template <class TileT>
inline int isa_offset(int r, int c) noexcept {
    constexpr int R = TileT::Rows, C = TileT::Cols;
    if constexpr (TileT::SFractal == SLayout::NoneBox) {
        return TileT::isRowMajor ? r * C + c : c * R + r;
    } else {
        static_assert(TileT::SFractalSize != TileConfig::fractalMxSize, "our backend has no MX fractal layout");
        constexpr int IR = inner_rows<TileT>(), IC = inner_cols<TileT>();
        static_assert(R % IR == 0 && C % IC == 0, "a boxed tile is a whole number of boxes");
        static_assert(TileT::isRowMajor || TileT::SFractal == SLayout::RowMajor,
                      "fractal tiles are NZ, ZN or ZZ (the ISA has no column-major grid of column-major boxes)");
        const int br = r / IR, bc = c / IC, ir = r % IR, ic = c % IC;
        const int box = TileT::isRowMajor ? br * (C / IC) + bc : bc * (R / IR) + br;
        const int in = TileT::SFractal == SLayout::RowMajor ? ir * IC + ic : ic * IR + ir;
        return box * IR * IC + in;
    }
}

// Our row-major storage of a tile -> the ISA's placement of the same elements, and back.
template <class TileT>
inline void to_isa(const std::uint8_t* ours, std::uint8_t* isa) noexcept {
    constexpr std::size_t E = sizeof(typename TileT::DType);
    for (int r = 0; r < TileT::Rows; ++r)
        for (int c = 0; c < TileT::Cols; ++c)
            std::memcpy(isa + E * isa_offset<TileT>(r, c), ours + E * (r * TileT::Cols + c), E);
}
template <class TileT>
inline void from_isa(const std::uint8_t* isa, std::uint8_t* ours) noexcept {
    constexpr std::size_t E = sizeof(typename TileT::DType);
    for (int r = 0; r < TileT::Rows; ++r)
        for (int c = 0; c < TileT::Cols; ++c)
            std::memcpy(ours + E * (r * TileT::Cols + c), isa + E * isa_offset<TileT>(r, c), E);
}
}  // namespace sim

// TASSIGN(tile, byte_offset): place `tile` at `byte_offset` in the running core's buffer of its
// tile type (Vec: UB, Mat: L1, Left: L0A, Right: L0B, Acc: L0C). A tile past the buffer's end or
// an offset that is not a multiple of 32 bytes is reported and the tile stays unplaced (every
// instruction on it is then reported and skipped).
template <typename T, typename AddrType>
inline void TASSIGN(T& tile, AddrType addr) noexcept {
    static_assert(is_tile_data_v<T>, "TASSIGN places a Tile");
    static_assert(std::is_integral<AddrType>::value, "TASSIGN takes a byte offset into the tile's buffer");
    using D = typename T::DType;
    sim::Core& c = sim::core();
    constexpr int b = T::buf();
    constexpr std::uint64_t bytes = T::GetSizeInBytes();
    const auto off = static_cast<std::uint64_t>(addr);
    bool negative = false;
    if constexpr (std::is_signed<AddrType>::value) negative = addr < 0;
    if (negative || off > c.cap[b] || bytes > c.cap[b] - off) {  // no wrap-around for huge offsets
        ::simpler::report_kernel_error(
            "TASSIGN: %s %s [%d, %d] tile (%llu bytes) at %s+0x%llx ends past the buffer's end (%s holds %llu bytes)",
            sim::tile_type_name(T::Loc), sim::dtype_name<D>(), T::Rows, T::Cols, static_cast<unsigned long long>(bytes),
            sim::buffer_name(b), static_cast<unsigned long long>(off), sim::buffer_name(b),
            static_cast<unsigned long long>(c.cap[b]));
        tile.sim_place(nullptr, 0, 0);
        return;
    }
    if (off % TileConfig::alignedSize != 0) {
        ::simpler::report_kernel_error("TASSIGN: %s tile at %s+0x%llx is not 32-byte aligned", sim::tile_type_name(T::Loc),
                                       sim::buffer_name(b), static_cast<unsigned long long>(off));
        tile.sim_place(nullptr, 0, 0);
        return;
    }
    sim::TileDesc desc{T::Loc, sim::dtype_name<D>(), T::Rows, T::Cols, static_cast<std::uint8_t>(b),
                       static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(bytes)};
    desc.blayout = static_cast<std::uint8_t>(T::BFractal);
    desc.slayout = static_cast<std::uint8_t>(T::SFractal);
    desc.esize = static_cast<std::uint8_t>(sizeof(D));
    desc.fractal = T::SFractalSize;
    desc.plain = sim::plain_layout<T>();
    if constexpr (!sim::plain_layout<T>()) {
        desc.to_isa = &sim::to_isa<T>;
        desc.from_isa = &sim::from_isa<T>;
    }
    const std::uint32_t id = sim::register_tile(c, desc);
    tile.sim_place(reinterpret_cast<D*>(c.base[b] + off), static_cast<std::uint32_t>(off), id);
}

namespace sim {
// The largest capacity of each buffer over the platforms (a5's 256 KiB L0C and 4 KiB BT): what a
// static placement can be refused for at compile time on any platform.
inline constexpr std::uint64_t kMaxBufferBytes[kBufs] = {192u << 10, 512u << 10, 64u << 10,
                                                         64u << 10,  256u << 10, 4u << 10};
}  // namespace sim

// TASSIGN<Addr>(tile): the static form. A tile past the largest platform's buffer, or an
// address that is not 32-byte aligned, is a compile error; the running core's capacity is
// checked again at run time.
template <std::size_t Addr, typename T>
inline std::enable_if_t<is_tile_data_v<T>> TASSIGN(T& tile) noexcept {
    static_assert(Addr % TileConfig::alignedSize == 0, "TASSIGN: the address must be 32-byte aligned");
    static_assert(Addr + T::GetSizeInBytes() <= sim::kMaxBufferBytes[T::buf()],
                  "TASSIGN: the tile ends past its buffer's end on every platform");
    TASSIGN(tile, static_cast<std::uint64_t>(Addr));
}

}  // namespace pto
