import pypto.language as pl

M = pl.dynamic("M")  # rows (tokens, or tokens x heads): a run-time value
N = pl.dynamic("N")  # a row's length, up to one tile
T, W = 16, 128  # the tile: 16 rows, up to 128 columns


def rms_norm(dt):
    narrow = dt != pl.FP32  # computed in FP32

    @pl.jit
    def rms_norm_k(x: pl.Tensor[[M, N], dt], w: pl.Tensor[[N], dt], eps: pl.FP32, out: pl.Out[pl.Tensor[[M, N], dt]]):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_norm"):
                if (i + 1) * T <= M:
                    rows = T
                else:
                    rows = M - i * T
                t = pl.load(x, [i * T, 0], [T, W], valid_shape=[rows, N])
                g = pl.load(w, [0], [W], valid_shape=[1, N])
                if narrow:
                    t = pl.cast(t, target_type=pl.FP32)
                    g = pl.cast(g, target_type=pl.FP32)
                tmp = pl.create_tile([T, W], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
                ss: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(pl.mul(t, t), tmp)
                y = pl.col_expand_mul(pl.row_expand_mul(t, pl.rsqrt(pl.add(pl.div(ss, N), eps))), g)
                if narrow:
                    y = pl.cast(y, target_type=dt)
                pl.store(y, [i * T, 0], out)
        return out

    return rms_norm_k


def softmax(dt):
    narrow = dt != pl.FP32

    @pl.jit
    def softmax_k(x: pl.Tensor[[M, N], dt], out: pl.Out[pl.Tensor[[M, N], dt]]):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
                if (i + 1) * T <= M:
                    rows = T
                else:
                    rows = M - i * T
                t = pl.load(x, [i * T, 0], [T, W], valid_shape=[rows, N])
                if narrow:
                    t = pl.cast(t, target_type=pl.FP32)
                tmp = pl.create_tile([T, W], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
                m: pl.Tile[[T, 1], pl.FP32] = pl.row_max(t, tmp)
                e = pl.exp(pl.row_expand_sub(t, m))
                s: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(e, tmp)
                y = pl.row_expand_div(e, s)
                if narrow:
                    y = pl.cast(y, target_type=dt)
                pl.store(y, [i * T, 0], out)
        return out

    return softmax_k


D2 = pl.dynamic("D2")  # half the head dim


def rope(dt):
    narrow = dt != pl.FP32

    @pl.jit
    def rope_k(x: pl.Tensor[[M, N], dt], cos: pl.Tensor[[M, D2], dt], sin: pl.Tensor[[M, D2], dt], out: pl.Out[pl.Tensor[[M, N], dt]]):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rope"):
                if (i + 1) * T <= M:
                    rows = T
                else:
                    rows = M - i * T
                x1 = pl.load(x, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                x2 = pl.load(x, [i * T, D2], [T, W // 2], valid_shape=[rows, D2])
                c = pl.load(cos, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                s = pl.load(sin, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                if narrow:
                    x1 = pl.cast(x1, target_type=pl.FP32)
                    x2 = pl.cast(x2, target_type=pl.FP32)
                    c = pl.cast(c, target_type=pl.FP32)
                    s = pl.cast(s, target_type=pl.FP32)
                y1 = pl.sub(pl.mul(x1, c), pl.mul(x2, s))
                y2 = pl.add(pl.mul(x2, c), pl.mul(x1, s))
                if narrow:
                    y1 = pl.cast(y1, target_type=dt)
                    y2 = pl.cast(y2, target_type=dt)
                pl.store(y1, [i * T, 0], out)
                pl.store(y2, [i * T, D2], out)
        return out

    return rope_k


H = 64  # SwiGLU's hidden and intermediate sizes are pinned (the cube tiles); rows are dynamic
F = 64


def swiglu(dt):
    narrow = dt != pl.FP32

    @pl.jit
    def swiglu_k(x: pl.Tensor[[M, H], dt], wg: pl.Tensor[[H, F], dt], wu: pl.Tensor[[H, F], dt], out: pl.Out[pl.Tensor[[M, F], dt]]):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="swiglu"):
                if (i + 1) * T <= M:
                    rows = T
                else:
                    rows = M - i * T
                xa = pl.move(pl.load(x, [i * T, 0], [T, H], valid_shape=[rows, H], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left)
                g_acc: pl.Tile[[T, F], pl.FP32] = pl.matmul(xa, pl.move(pl.load(wg, [0, 0], [H, F], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right))
                u_acc: pl.Tile[[T, F], pl.FP32] = pl.matmul(xa, pl.move(pl.load(wu, [0, 0], [H, F], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right))
                g = pl.move(g_acc, target_memory=pl.MemorySpace.Vec)
                u = pl.move(u_acc, target_memory=pl.MemorySpace.Vec)
                y = pl.mul(pl.mul(g, pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0))), u)
                y = pl.set_validshape(y, rows, F)
                if narrow:
                    y = pl.cast(y, target_type=dt)
                pl.store(y, [i * T, 0], out)
        return out

    return swiglu_k
