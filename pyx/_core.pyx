# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Typed bridge from Python to the C core (csrc/include/avgpool.h).

Descriptors are validated once, when built, into C structs; a call checks
only the tensor, then runs the C entry point with the GIL released. Every
C status becomes a ValueError / TypeError / MemoryError naming the argument
and the rule it broke.
"""
from libc.stdint cimport int64_t, uint16_t

DTYPE_F32 = <int>AP_DTYPE_F32
DTYPE_F64 = <int>AP_DTYPE_F64
DTYPE_F16 = <int>AP_DTYPE_F16
DTYPE_BF16 = <int>AP_DTYPE_BF16
LAYOUT_NCHW = <int>AP_LAYOUT_NCHW
LAYOUT_NHWC = <int>AP_LAYOUT_NHWC

ctypedef fused element:
    float
    double
    uint16_t

# The argument each status is about, for error messages.
cdef dict _STATUS_ARGUMENT = {
    AP_ERR_RANK: "x",
    AP_ERR_LAYOUT: "layout",
    AP_ERR_DTYPE: "x",
    AP_ERR_TENSOR_SIZE: "x",
    AP_ERR_WINDOW: "window_size",
    AP_ERR_STRIDE: "strides",
    AP_ERR_DILATION: "dilations",
    AP_ERR_PADDING: "start_padding/end_padding",
    AP_ERR_WINDOW_TOO_LARGE: "window_size",
    AP_ERR_OUTPUT_SIZE: "output_sizes",
    AP_ERR_OVERFLOW: "x",
}


def version():
    return ap_version().decode()


def isa():
    return ap_isa().decode()


def set_isa(str name):
    """Switch every kernel to ``name`` ('scalar', 'avx2', 'avx512', 'neon' or 'auto').

    Not thread-safe; meant for tests and benchmarks that compare the paths."""
    cdef bytes b = name.encode()
    if ap_set_isa(b) != AP_OK:
        raise ValueError(f"isa {name!r} is unknown or not supported by this CPU and build")


def openmp_enabled():
    return bool(ap_openmp_enabled())


def max_threads():
    return ap_max_threads()


cdef int _raise(ap_status status, str detail="", str argument=None) except -1:
    message = ap_status_string(status).decode()
    if detail:
        message = f"{message} ({detail})"
    if status == AP_ERR_OUT_OF_MEMORY:
        raise MemoryError(message)
    if status == AP_ERR_ISA:
        raise RuntimeError(f"AVGPOOL_ISA: {message}")
    if status == AP_ERR_DTYPE:
        raise TypeError(f"x: {message}")
    if argument is None:
        argument = _STATUS_ARGUMENT.get(status, "argument")
    raise ValueError(f"{argument}: {message}")


cdef int _tensor(ap_tensor_desc *t, tuple shape, int rank, int layout) except -1:
    """Describe an (N, C, *spatial) or (N, *spatial, C) shape for the core."""
    cdef Py_ssize_t i
    if len(shape) != rank + 2:
        axes = ("L",), ("H", "W"), ("D", "H", "W")
        spatial = ", ".join(axes[rank - 1]) if 1 <= rank <= 3 else "..."
        expect = f"(N, C, {spatial})" if layout == AP_LAYOUT_NCHW else f"(N, {spatial}, C)"
        raise ValueError(
            f"x: expected a {rank + 2}-D input {expect} for {rank} spatial axes, "
            f"got shape {shape}")
    t.rank = rank
    t.layout = <ap_layout>layout
    t.batch = shape[0]
    if layout == AP_LAYOUT_NCHW:
        t.channels = shape[1]
        for i in range(rank):
            t.sizes[i] = shape[2 + i]
    else:
        t.channels = shape[rank + 1]
        for i in range(rank):
            t.sizes[i] = shape[1 + i]
    return 0


cdef tuple _shape(const ap_tensor_desc *t, const int64_t *out):
    spatial = tuple([out[i] for i in range(t.rank)])
    if t.layout == AP_LAYOUT_NCHW:
        return (t.batch, t.channels) + spatial
    return (t.batch,) + spatial + (t.channels,)


cdef void _fill(int64_t *dst, tuple src):
    cdef Py_ssize_t i
    for i in range(len(src)):
        dst[i] = src[i]


cdef class PoolDesc:
    """A validated ap_pool_desc; built by avgpool.AveragePoolingDesc."""
    cdef ap_pool_desc c

    def __cinit__(self, tuple window, tuple strides, tuple dilations, tuple start_padding,
                  tuple end_padding, tuple output_sizes, bint include_padding,
                  bint count_overhang, int64_t divisor_override):
        self.c.rank = len(window)
        _fill(self.c.window, window)
        _fill(self.c.strides, strides)
        _fill(self.c.dilations, dilations)
        _fill(self.c.start_padding, start_padding)
        _fill(self.c.end_padding, end_padding)
        _fill(self.c.output_sizes, output_sizes)
        self.c.include_padding = include_padding
        self.c.count_overhang = count_overhang
        self.c.divisor_override = divisor_override

    cdef int _fail(self, ap_status status, const ap_tensor_desc *t) except -1:
        """Raise for status, naming the spatial axis and argument that break the rule."""
        cdef int a
        big = 2**63 - 1
        for a in range(self.c.rank):
            # Python integers: these checks cannot overflow themselves.
            k, s, dil = self.c.window[a], self.c.strides[a], self.c.dilations[a]
            pb, pe, size = self.c.start_padding[a], self.c.end_padding[a], t.sizes[a]
            ek = (k - 1) * dil + 1
            out = self.c.output_sizes[a]
            if status == AP_ERR_WINDOW_TOO_LARGE and ek > size + pb + pe:
                _raise(status, f"spatial axis {a}: effective window {ek} > padded input "
                               f"{size + pb + pe} = {size} + {pb} + {pe}")
            if status == AP_ERR_OUTPUT_SIZE and out > 0 and (out - 1) * s - pb >= size + pe:
                _raise(status, f"spatial axis {a}: output size {out} starts its last window "
                               f"past the padded end")
            if status == AP_ERR_OVERFLOW:
                if ek > big:
                    _raise(status, f"spatial axis {a}", "window_size/dilations")
                if size + pb + pe > big:
                    _raise(status, f"spatial axis {a}", "start_padding/end_padding")
                if out > 0 and (out - 1) * s + ek > big:
                    _raise(status, f"spatial axis {a}", "output_sizes/strides")
        _raise(status)

    def output_shape(self, tuple shape, int layout):
        cdef ap_tensor_desc t
        cdef int64_t out[3]
        _tensor(&t, shape, self.c.rank, layout)
        cdef ap_status s = ap_pool_output_sizes(&self.c, &t, out)
        if s != AP_OK:
            self._fail(s, &t)
        return _shape(&t, out)

    def __call__(self, x, y, int dtype, int layout, int num_threads):
        """Pool C-contiguous x into y (same dtype; uint16 views for 16-bit types)."""
        cdef ap_tensor_desc t
        _tensor(&t, x.shape, self.c.rank, layout)
        x = x.reshape(-1)
        y = y.reshape(-1)
        cdef ap_status s
        if dtype == AP_DTYPE_F32:
            s = _pool[float](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        elif dtype == AP_DTYPE_F64:
            s = _pool[double](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        else:
            s = _pool[uint16_t](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        if s != AP_OK:
            self._fail(s, &t)


cdef class AdaptiveDesc:
    """A validated ap_adaptive_desc; built by avgpool.AdaptiveAveragePoolingDesc."""
    cdef ap_adaptive_desc c

    def __cinit__(self, tuple output_sizes):
        self.c.rank = len(output_sizes)
        _fill(self.c.output_sizes, output_sizes)

    def output_shape(self, tuple shape, int layout):
        cdef ap_tensor_desc t
        cdef int64_t out[3]
        _tensor(&t, shape, self.c.rank, layout)
        cdef ap_status s = ap_adaptive_output_sizes(&self.c, &t, out)
        if s != AP_OK:
            _raise(s, "", "output_sizes" if s == AP_ERR_OVERFLOW else None)
        return _shape(&t, out)

    def __call__(self, x, y, int dtype, int layout, int num_threads):
        cdef ap_tensor_desc t
        _tensor(&t, x.shape, self.c.rank, layout)
        x = x.reshape(-1)
        y = y.reshape(-1)
        cdef ap_status s
        if dtype == AP_DTYPE_F32:
            s = _adaptive[float](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        elif dtype == AP_DTYPE_F64:
            s = _adaptive[double](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        else:
            s = _adaptive[uint16_t](&self.c, &t, <ap_dtype>dtype, x, y, num_threads)
        if s != AP_OK:
            _raise(s)


cdef ap_status _pool(const ap_pool_desc *d, const ap_tensor_desc *t, ap_dtype dtype,
                     const element[::1] x, element[::1] y, int num_threads) noexcept:
    cdef const void *xp = &x[0] if x.shape[0] else NULL
    cdef void *yp = &y[0] if y.shape[0] else NULL
    cdef ap_status s
    with nogil:
        s = ap_avgpool(d, t, dtype, xp, yp, num_threads)
    return s


cdef ap_status _adaptive(const ap_adaptive_desc *d, const ap_tensor_desc *t, ap_dtype dtype,
                         const element[::1] x, element[::1] y, int num_threads) noexcept:
    cdef const void *xp = &x[0] if x.shape[0] else NULL
    cdef void *yp = &y[0] if y.shape[0] else NULL
    cdef ap_status s
    with nogil:
        s = ap_adaptive_avgpool(d, t, dtype, xp, yp, num_threads)
    return s
