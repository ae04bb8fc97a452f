# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Typed bridge from Python to the C core (csrc/include/avgpool.h).

Descriptors are validated once, when built, into C structs; a call (one
`run`) checks the array, the layout, `out` and the thread count, allocates the
output and runs the C entry point with the GIL released. Every
C status becomes a ValueError / TypeError / MemoryError naming the argument
and the rule it broke.
"""
from cpython.pycapsule cimport PyCapsule_GetContext, PyCapsule_GetPointer, PyCapsule_New, \
    PyCapsule_SetContext
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport int64_t, uint16_t
from libc.stdlib cimport getenv

cimport numpy as cnp
import numpy as np
from operator import index as operator_index

cnp.import_array()


# bfloat16 comes from ml_dtypes as a user-defined numpy dtype; avgpool._api registers it.
cdef int _bf16_type = -1
# avgpool._api's converters for inputs that are not ndarrays (torch tensors, array-likes).
cdef object _as_array = None
cdef object _is_torch = None
cdef object _to_torch = None


def register_bfloat16(dtype):
    """Tell the bridge which numpy type number is ml_dtypes.bfloat16."""
    global _bf16_type
    _bf16_type = np.dtype(dtype).num


def register_converters(as_array, is_torch, to_torch):
    """avgpool._api's input coercion, for compiled operators called on non-ndarrays."""
    global _as_array, _is_torch, _to_torch
    _as_array, _is_torch, _to_torch = as_array, is_torch, to_torch


cdef int _dtype_code(cnp.ndarray a):
    """The core's dtype of a native-byte-order array, or -1."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_FLOAT32:
        return AP_DTYPE_F32
    if t == cnp.NPY_FLOAT64:
        return AP_DTYPE_F64
    if t == cnp.NPY_FLOAT16:
        return AP_DTYPE_F16
    if t == _bf16_type:
        return AP_DTYPE_BF16
    return -1


cdef int _layout(layout, str name="layout") except -1:
    """String attributes match without regard to letter case (docs/semantics.md)."""
    if layout == "NCHW":  # the common spellings first: no string work on the hot path
        return AP_LAYOUT_NCHW
    if layout == "NHWC":
        return AP_LAYOUT_NHWC
    if isinstance(layout, str):
        if layout.upper() == "NCHW":
            return AP_LAYOUT_NCHW
        if layout.upper() == "NHWC":
            return AP_LAYOUT_NHWC
    raise ValueError(
        f"{name} must be 'NCHW' (channels first) or 'NHWC' (channels last), in any letter case, "
        f"got {layout!r}")


cdef int _threads(num_threads) except -1:
    """num_threads, else AVGPOOL_NUM_THREADS, else 0 (the OpenMP default: OMP_NUM_THREADS)."""
    cdef const char *env
    cdef str name = "num_threads"
    if num_threads is None:
        env = getenv(b"AVGPOOL_NUM_THREADS")
        if env == NULL or env[0] == 0:
            return 0
        name = "AVGPOOL_NUM_THREADS"
        try:
            n = int(env.decode())
        except ValueError:
            raise ValueError(
                f"AVGPOOL_NUM_THREADS must be a positive integer, got {env.decode()!r}") from None
    elif isinstance(num_threads, bool):
        raise TypeError(f"num_threads must be an integer, got bool {num_threads!r}")
    else:
        try:
            n = operator_index(num_threads)
        except TypeError:
            raise TypeError(f"num_threads must be an integer, got "
                            f"{type(num_threads).__name__} {num_threads!r}") from None
    if not 1 <= n <= 65536:
        raise ValueError(f"{name} must be between 1 and 65536, got {n}")
    return n



cdef extern from "output_cache.h":
    size_t AP_OUTPUT_CACHE_MIN_BYTES
    void *ap_output_cache_take(size_t n, size_t *size)
    void ap_output_cache_give(void *p, size_t size)
    void ap_output_cache_clear()
    size_t ap_output_cache_bytes()
    int ap_output_cache_blocks()
    size_t ap_output_cache_limit()


cdef const char *_BLOCK = b"avgpool.output_block"


cdef void _give_block(object capsule) noexcept:
    """The capsule's destructor (its array has died): the block back to the cache."""
    ap_output_cache_give(PyCapsule_GetPointer(capsule, _BLOCK),
                         <size_t>PyCapsule_GetContext(capsule))


cdef cnp.ndarray _new_array(int nd, cnp.npy_intp *dims, int typenum, bint cached=True):
    """A new C-contiguous array, its contents undefined (as numpy.empty); when `cached`, one of
    AP_OUTPUT_CACHE_MIN_BYTES or more on a block of output_cache.h, which a capsule (its base)
    gives back when the array dies."""
    cdef size_t n = 1, size
    cdef int i
    for i in range(nd):
        if dims[i] < 0 or (dims[i] > 0 and n > <size_t>PY_SSIZE_T_MAX // 8 // <size_t>dims[i]):
            n = 0  # too big: numpy says so
            break
        n *= <size_t>dims[i]
    # elements of at most 8 bytes: most calls are decided before the dtype is looked up
    if not cached or n < AP_OUTPUT_CACHE_MIN_BYTES // 8:
        return cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    n *= <size_t>cnp.PyArray_DescrFromType(typenum).itemsize
    if n < AP_OUTPUT_CACHE_MIN_BYTES:
        return cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    cdef void *block = ap_output_cache_take(n, &size)
    if block == NULL:
        raise MemoryError(f"no memory for an output of {n} bytes")
    try:
        capsule = PyCapsule_New(block, _BLOCK, <void (*)(object) noexcept>_give_block)
    except BaseException:
        ap_output_cache_give(block, size)
        raise
    PyCapsule_SetContext(capsule, <void *>size)
    cdef cnp.ndarray y = cnp.PyArray_SimpleNewFromData(nd, dims, typenum, block)
    cnp.set_array_base(y, capsule)
    return y


cdef extern from *:
    """
    int64_t ap_stream_bytes(void); /* csrc/dispatch.c */
    """
    int64_t ap_stream_bytes()


def stream_bytes():
    """Bytes moved (input read + output written) past which float32 outputs are written with
    streaming stores: AVGPOOL_STREAM_BYTES, else the last-level cache's size."""
    return ap_stream_bytes()


def output_cache_info():
    """(blocks, bytes) kept by output_cache.h now, and the limit in bytes."""
    return ap_output_cache_blocks(), ap_output_cache_bytes(), ap_output_cache_limit()


def output_cache_clear():
    """Free every kept block."""
    ap_output_cache_clear()


cdef cnp.ndarray _output(cnp.ndarray a, tuple shape, out, x, str name="x", bint cached=True):
    """A new output array (_new_array), or `out` checked against shape, dtype, layout and
    overlap with the array `a` the kernel reads and the caller's `x` (of which `a` may be a
    copy); `name` is x's argument name."""
    cdef cnp.ndarray y
    cdef cnp.npy_intp dims[5]
    cdef int i
    if out is None:
        for i in range(len(shape)):
            dims[i] = shape[i]
        try:
            return _new_array(len(shape), dims, cnp.PyArray_TYPE(a), cached)
        except ValueError:  # numpy: "array is too big"
            raise ValueError(f"{name}: the output of shape {shape} is too big for a numpy array") from None
    if type(out) is not np.ndarray:
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    y = out
    if not _has_shape(y, shape):
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    # a is native: a byte-swapped out has a's type number but not its dtype
    if cnp.PyArray_TYPE(y) != cnp.PyArray_TYPE(a) or not cnp.PyArray_ISNOTSWAPPED(y):
        raise TypeError(f"out has dtype {out.dtype}, expected {(<object>a).dtype} (the dtype of "
                        f"{name})")
    _check_out_memory(y)
    if _overlap(a, y) or (x is not a and np.may_share_memory(x, y)):
        raise ValueError(f"out must not overlap {name}")
    return y


cdef int _check_out_memory(cnp.ndarray y) except -1:
    """out's memory as the kernels write it: C-contiguous, aligned for its dtype, writeable."""
    cdef size_t align
    if not cnp.PyArray_IS_C_CONTIGUOUS(y):
        raise ValueError("out must be C-contiguous")
    if not cnp.PyArray_ISALIGNED(y):
        align = (<object>y).dtype.alignment
        raise ValueError(f"out must be aligned for its dtype: its data address a multiple of "
                         f"{align} bytes (it is {<size_t>cnp.PyArray_DATA(y) % align} past one)")
    if not cnp.PyArray_ISWRITEABLE(y):
        raise ValueError("out must be writeable")
    return 0


cdef inline bint _overlap(cnp.ndarray a, cnp.ndarray b):
    """Whether two C-contiguous arrays share memory: their byte ranges meet."""
    cdef char *pa = <char *>cnp.PyArray_DATA(a)
    cdef char *pb = <char *>cnp.PyArray_DATA(b)
    return (cnp.PyArray_NBYTES(a) > 0 and cnp.PyArray_NBYTES(b) > 0 and
            pa < pb + cnp.PyArray_NBYTES(b) and pb < pa + cnp.PyArray_NBYTES(a))


cdef cnp.ndarray _prepare(x, str name="x"):
    """x as a native-byte-order, C-contiguous ndarray of a supported dtype (`name`: x's
    argument name)."""
    cdef cnp.ndarray a = x
    if not cnp.PyArray_ISNOTSWAPPED(a):
        a = x.astype(x.dtype.newbyteorder("="))  # byte-swapped data: a native copy
    if _dtype_code(a) < 0:
        raise TypeError(
            f"{name}: dtype {x.dtype} is not supported; use float32, float64, float16 or "
            f"bfloat16")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        a = np.ascontiguousarray(a)
    if not cnp.PyArray_ISALIGNED(a):
        a = a.copy()  # the C core takes elements at their alignment (AP_ERR_ALIGNMENT)
    return a

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
    AP_ERR_TILE: "out_region",
    AP_ERR_NAN_POLICY: "nan_policy",
    AP_ERR_ALIGNMENT: "x",
}


# The core's field names (ap_error.field) as the arguments of the Python API.
cdef dict _FIELD_ARGUMENT = {
    "window": "window_size",
    "strides": "strides",
    "dilations": "dilations",
    "start_padding": "start_padding",
    "end_padding": "end_padding",
    "output_sizes": "output_sizes",
    "layout": "layout",
    "nan_policy": "nan_policy",
    "min_count": "min_count",
}


cdef int _raise_error(const ap_error *err) except -1:
    """Raise for a filled ap_error: the argument from its field (tensor fields are x's), the
    spatial axis and the core's numbers in parentheses."""
    field = err.field.decode() if err.field != NULL else ""
    argument = None
    if field:
        argument = "/".join(_FIELD_ARGUMENT.get(f, "x") for f in field.split("/"))
    detail = err.detail.decode()
    if err.axis >= 0:
        detail = f"spatial axis {err.axis}: {detail}" if detail else f"spatial axis {err.axis}"
    return _raise(err.status, detail, argument)


cdef int _dtype_code_of(dtype) except -1:
    """The core's dtype of a numpy dtype (for explain, which has no array)."""
    cdef int num = np.dtype(dtype).num
    if num == cnp.NPY_FLOAT32:
        return AP_DTYPE_F32
    if num == cnp.NPY_FLOAT64:
        return AP_DTYPE_F64
    if num == cnp.NPY_FLOAT16:
        return AP_DTYPE_F16
    if num == _bf16_type:
        return AP_DTYPE_BF16
    raise TypeError(
        f"dtype {np.dtype(dtype)} is not supported; use float32, float64, float16 or bfloat16")


def version():
    return ap_version().decode()


def build_info():
    return ap_build_info().decode()


def compiled_isas():
    """The instruction sets compiled in, scalar first (this CPU may lack some)."""
    return tuple(ap_compiled_isas().decode().split())


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


def thread_pool():
    return ap_thread_pool().decode()


def set_thread_pool(str name):
    cdef bytes b = name.encode()
    if ap_set_thread_pool(b) != AP_OK:
        raise ValueError(f"thread pool {name!r} is unknown (choose 'own' or 'openmp')"
                         if name not in ("own", "openmp") else
                         "thread pool 'openmp' needs OpenMP, which this build of avgpool lacks")


def relayout(x, layout, out, num_threads):
    """x, an (N, C, *spatial) array when layout is 'NCHW' or (N, *spatial, C) when 'NHWC',
    copied into the other layout (into out, or a new array), by ap_relayout's tiles."""
    cdef cnp.ndarray a = _prepare(x)
    cdef int lay = _layout(layout)
    cdef tuple shape = (<object>a).shape
    cdef ap_tensor_desc t
    if not 3 <= len(shape) <= 5:
        raise ValueError(f"x must have 3 to 5 axes (batch, channels and 1 to 3 spatial), got "
                         f"shape {shape}")
    _tensor(&t, shape, len(shape) - 2, lay, "x")
    cdef int nt = _threads(num_threads)
    cdef Py_ssize_t last = len(shape) - 1  # (wraparound is off: no negative indices)
    other = ((shape[0],) + shape[2:] + (shape[1],) if lay == AP_LAYOUT_NCHW
             else (shape[0], shape[last]) + shape[1:last])
    cdef cnp.ndarray y = _output(a, other, out, x)
    cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
    cdef const void *xp = cnp.PyArray_DATA(a)
    cdef void *yp = cnp.PyArray_DATA(y)
    cdef ap_status s
    if cnp.PyArray_NBYTES(a) < _GIL_FREE_BYTES:
        s = ap_relayout(&t, dtype, xp, yp, nt)
    else:
        with nogil:
            s = ap_relayout(&t, dtype, xp, yp, nt)
    if s != AP_OK:
        _raise(s, "", "x")
    return y


cdef int _raise(ap_status status, str detail="", str argument=None) except -1:
    message = ap_status_string(status).decode()
    if detail:
        message = f"{message} ({detail})"
    if status == AP_ERR_OUT_OF_MEMORY:
        raise MemoryError(message)
    if status == AP_ERR_ISA:
        raise RuntimeError(message)
    if status == AP_ERR_DTYPE:
        raise TypeError(f"x: {message}")
    if argument is None:
        argument = _STATUS_ARGUMENT.get(status, "argument")
    raise ValueError(f"{argument}: {message}")


cdef int _tensor(ap_tensor_desc *t, tuple shape, int rank, int layout, str field,
                 str name="x") except -1:
    """Describe an (N, C, *spatial) or (N, *spatial, C) shape for the core; `field` is the
    descriptor field that sets the rank (named with `name`, the shape's argument, when the
    ranks differ)."""
    cdef Py_ssize_t i
    if len(shape) != rank + 2:
        axes = ("L",), ("H", "W"), ("D", "H", "W")
        spatial = ", ".join(axes[rank - 1]) if 1 <= rank <= 3 else "..."
        expect = f"(N, C, {spatial})" if layout == AP_LAYOUT_NCHW else f"(N, {spatial}, C)"
        raise ValueError(
            f"{name}/{field}: {field} has {rank} {'entry' if rank == 1 else 'entries'} "
            f"({rank} spatial {'axis' if rank == 1 else 'axes'}), so {name} must be a "
            f"{rank + 2}-D input {expect}, got shape {shape}")
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
    """The shape of t's layout with spatial sizes `out` (tuple displays: one allocation, on
    the path of every call)."""
    if t.layout == AP_LAYOUT_NCHW:
        if t.rank == 1:
            return (t.batch, t.channels, out[0])
        if t.rank == 2:
            return (t.batch, t.channels, out[0], out[1])
        return (t.batch, t.channels, out[0], out[1], out[2])
    if t.rank == 1:
        return (t.batch, out[0], t.channels)
    if t.rank == 2:
        return (t.batch, out[0], out[1], t.channels)
    return (t.batch, out[0], out[1], out[2], t.channels)


cdef void _fill(int64_t *dst, tuple src):
    cdef Py_ssize_t i
    for i in range(len(src)):
        dst[i] = src[i]


# Calls on less input than this keep the GIL: releasing and taking it back costs more than a
# microsecond-long kernel would let another thread do.
cdef Py_ssize_t _GIL_FREE_BYTES = 65536


cdef inline bint _has_shape(cnp.ndarray a, tuple shape):
    """a.shape == shape, without building a tuple."""
    cdef int i
    cdef cnp.npy_intp *dims = cnp.PyArray_DIMS(a)
    if cnp.PyArray_NDIM(a) != len(shape):
        return False
    for i in range(len(shape)):
        if dims[i] != <cnp.npy_intp>shape[i]:
            return False
    return True


cdef int _check_grad_shape(cnp.ndarray gy, tuple expected, tuple input_shape) except -1:
    if (<object>gy).shape != expected:
        raise ValueError(f"grad_out has shape {(<object>gy).shape}, expected {expected} (the "
                         f"output shape for input_shape {input_shape})")
    return 0


# Tiles of a larger array (ap_avgpool_tile): one pair of functions for both descriptor kinds,
# `pool` or `adaptive` being NULL.
cdef int _tile_args(ap_tensor_desc *t, ap_tile *tile, tuple whole_shape, tuple out_start,
                    tuple out_size, int rank, layout, str field) except -1:
    cdef int i
    _tensor(t, whole_shape, rank, _layout(layout), field, "whole_shape")
    if len(out_start) != rank or len(out_size) != rank:
        raise ValueError(f"out_region must have {rank} entries (one per spatial axis)")
    for i in range(rank):
        tile.out_start[i] = out_start[i]
        tile.out_size[i] = out_size[i]
        tile.in_start[i] = tile.in_size[i] = 0
    tile.batch = tile.channels = 0
    return 0


cdef tuple _tile_input(const ap_pool_desc *pool, const ap_adaptive_desc *adaptive,
                       tuple whole_shape, tuple out_start, tuple out_size, layout):
    cdef ap_tensor_desc t
    cdef ap_tile tile
    cdef int rank = pool.rank if pool != NULL else adaptive.rank
    _tile_args(&t, &tile, whole_shape, out_start, out_size, rank, layout,
               "window_size" if pool != NULL else "output_sizes")
    cdef ap_status s = (ap_pool_tile_input(pool, &t, &tile) if pool != NULL
                        else ap_adaptive_tile_input(adaptive, &t, &tile))
    cdef ap_error err
    if s == AP_ERR_TILE:
        _raise(s, f"output box at {out_start} of sizes {out_size}")
    if s != AP_OK:
        if (ap_pool_check(pool, &t, NULL, &err) if pool != NULL
                else ap_adaptive_check(adaptive, &t, NULL, &err)) != AP_OK:
            _raise_error(&err)
        _raise(s)
    return (tuple([tile.in_start[i] for i in range(rank)]),
            tuple([tile.in_size[i] for i in range(rank)]))


cdef object _run_tile(const ap_pool_desc *pool, const ap_adaptive_desc *adaptive, x,
                      tuple whole_shape, tuple out_start, tuple out_size, layout, out,
                      num_threads):
    cdef cnp.ndarray a = _prepare(x)
    cdef ap_tensor_desc t
    cdef ap_tensor_desc part
    cdef ap_tile tile
    cdef int i
    cdef int rank = pool.rank if pool != NULL else adaptive.rank
    cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
    start, size = _tile_input(pool, adaptive, whole_shape, out_start, out_size, layout)
    _tile_args(&t, &tile, whole_shape, out_start, out_size, rank, layout, "")
    _tensor(&part, (<object>a).shape, rank, t.layout, "whole_shape")
    for i in range(rank):
        tile.in_start[i] = start[i]
        tile.in_size[i] = size[i]
    if part.channels > t.channels:
        raise ValueError(f"x: a tile holds at most whole_shape's {t.channels} channels, got "
                         f"{part.channels}")
    # the tile's own channels; whole_shape's choose the kernels, as for the whole call, so that
    # every tile sums the same way. The batch decides nothing: any (avgpool.dask folds the
    # axes it does not pool into it)
    t.batch = part.batch
    tile.channels = part.channels
    if tuple([part.sizes[i] for i in range(rank)]) != size:
        raise ValueError(
            f"x: a tile for the output box at {out_start} of sizes {out_size} holds the input "
            f"box at {start} of sizes {size}, got spatial sizes "
            f"{tuple([part.sizes[i] for i in range(rank)])}")
    cdef int nt = _threads(num_threads)
    # a tile's result goes to a scheduler (avgpool.dask) that keeps or ships it: a block kept
    # once it dies would only add to a worker's peak memory (a 64 MiB chunk more, measured)
    cdef cnp.ndarray y = _output(a, _shape(&part, tile.out_size), out, x, "x", False)
    if part.batch == 0 or part.channels == 0:  # (0 would mean all of whole's in the C tile)
        return y
    cdef const void *xp = cnp.PyArray_DATA(a)
    cdef void *yp = cnp.PyArray_DATA(y)
    cdef ap_status s
    with nogil:
        if pool != NULL:
            s = ap_avgpool_tile(pool, &t, dtype, &tile, xp, yp, nt)
        else:
            s = ap_adaptive_avgpool_tile(adaptive, &t, dtype, &tile, xp, yp, nt)
    if s != AP_OK:
        _raise(s)
    return y


cdef class CompiledOperator:
    """Pooling compiled for one input shape, dtype and layout (``avgpool.compile_operator``).

    The plan (per-axis window tables, kernel path, kernel of the instruction set in use, thread
    count) is made once; a call checks only what may change between calls (the array's type,
    dtype, shape and memory order; ``out``'s) and runs it with the GIL released. Several Python
    threads may call one operator at once.
    """
    cdef ap_operator *op
    cdef readonly tuple input_shape
    cdef readonly tuple output_shape
    cdef readonly object dtype
    cdef readonly str layout
    cdef readonly str output_layout
    cdef readonly int num_threads
    cdef object desc
    cdef int typenum
    cdef int out_ndim
    cdef cnp.npy_intp out_dims[5]
    cdef cnp.npy_intp in_dims[5]

    def __cinit__(self):
        self.op = NULL

    def __dealloc__(self):
        ap_operator_destroy(self.op)

    def __init__(self, *args, **kwargs):
        raise TypeError("use avgpool.compile_operator(desc, input_shape, dtype, ...)")

    cdef _finish(self, tuple shape, ap_layout output_layout, dtype, int nt, desc):
        cdef ap_tensor_desc o
        cdef int64_t sizes[3]
        cdef int i
        ap_operator_output(self.op, &o)
        self.layout = "NHWC" if o.layout == AP_LAYOUT_NHWC else "NCHW"
        if output_layout != o.layout:
            ap_operator_set_output_layout(self.op, output_layout)
            ap_operator_output(self.op, &o)
        for i in range(o.rank):
            sizes[i] = o.sizes[i]
        self.input_shape = shape
        self.output_shape = _shape(&o, sizes)
        self.out_ndim = len(self.output_shape)
        for i in range(self.out_ndim):
            self.out_dims[i] = self.output_shape[i]
            self.in_dims[i] = shape[i]
        self.dtype = np.dtype(dtype)
        self.typenum = self.dtype.num
        self.output_layout = "NHWC" if o.layout == AP_LAYOUT_NHWC else "NCHW"
        self.num_threads = nt if nt > 0 else ap_max_threads()
        self.desc = desc

    def __repr__(self):
        other = ("" if self.output_layout == self.layout
                 else f"output_layout={self.output_layout!r}, ")
        return (f"CompiledOperator({self.desc!r}, input_shape={self.input_shape}, "
                f"dtype={self.dtype.name}, layout={self.layout!r}, {other}"
                f"num_threads={self.num_threads}) -> output_shape={self.output_shape}")

    def __reduce__(self):
        raise TypeError("a CompiledOperator holds a native plan and cannot be pickled; pickle "
                        "its descriptor and compile again")

    def __call__(self, x, out=None):
        """Pool ``x`` (of ``input_shape`` and ``dtype``) into ``out`` or a new array."""
        return self._apply(x, out, False)

    def backward(self, grad_out, out=None):
        """The gradient with respect to the input (``input_shape``) from ``grad_out``, the
        gradient with respect to the output (``output_shape``, ``dtype``), into ``out`` or a
        new array; as ``avgpool.average_pool_backward``, bit for bit."""
        return self._apply(grad_out, out, True)

    cdef object _apply(self, x, out, bint backward):
        """Check x (the input, or the output's gradient with backward) and out against the
        compiled shapes and dtype, then run the forward or the backward plan."""
        cdef cnp.ndarray a
        cdef cnp.ndarray y
        cdef ap_status s
        cdef str name = "grad_out" if backward else "x"
        cdef tuple shape_in = self.output_shape if backward else self.input_shape
        cdef tuple shape_out = self.input_shape if backward else self.output_shape
        src = x
        if type(x) is not cnp.ndarray:
            if _as_array is None:
                raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
            x = _as_array(x)
        a = <cnp.ndarray>x
        if cnp.PyArray_TYPE(a) != self.typenum:
            raise TypeError(f"{name} has dtype {(<object>a).dtype}, but the operator was "
                            f"compiled for {self.dtype}")
        if not _has_shape(a, shape_in):
            if backward:
                raise ValueError(f"grad_out has shape {(<object>a).shape}, expected the "
                                 f"operator's output_shape {shape_in}")
            raise ValueError(f"x has shape {(<object>a).shape}, but the operator was compiled "
                             f"for {shape_in}")
        if (not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISNOTSWAPPED(a)
                or not cnp.PyArray_ISALIGNED(a)):
            a = _prepare(a, name)  # a native, aligned C-contiguous copy, as the plain call makes
        cdef cnp.npy_intp *dims = &self.out_dims[0]
        if backward:
            dims = &self.in_dims[0]
        if out is None:
            y = _new_array(self.out_ndim, dims, self.typenum)
        else:
            if type(out) is not cnp.ndarray:
                raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
            y = <cnp.ndarray>out
            if not _has_shape(y, shape_out):
                raise ValueError(f"out has shape {(<object>y).shape}, expected {shape_out}")
            # a byte-swapped out has the same type number: the kernel would write native bytes
            if cnp.PyArray_TYPE(y) != self.typenum or not cnp.PyArray_ISNOTSWAPPED(y):
                raise TypeError(f"out has dtype {(<object>y).dtype}, expected {self.dtype}")
            _check_out_memory(y)
            if _overlap(a, y) or (a is not x and np.may_share_memory(x, y)):
                raise ValueError(f"out must not overlap {name}")
        cdef const void *xp = cnp.PyArray_DATA(a)
        cdef void *yp = cnp.PyArray_DATA(y)
        # calls on less input than _GIL_FREE_BYTES are over before another thread could start
        if cnp.PyArray_NBYTES(y if backward else a) < _GIL_FREE_BYTES:
            s = ap_operator_run_backward(self.op, xp, yp) if backward \
                else ap_operator_run(self.op, xp, yp)
        else:
            with nogil:
                if backward:
                    s = ap_operator_run_backward(self.op, xp, yp)
                else:
                    s = ap_operator_run(self.op, xp, yp)
        if s != AP_OK:
            _raise(s)
        if out is None and _is_torch is not None and type(src) is not cnp.ndarray and _is_torch(src):
            return _to_torch(y)
        return y

cdef class PoolDesc:
    """A validated ap_pool_desc; built by avgpool.AveragePoolingDesc."""
    cdef ap_pool_desc c

    def __cinit__(self, tuple window, tuple strides, tuple dilations, tuple start_padding,
                  tuple end_padding, tuple output_sizes, bint include_padding,
                  bint count_overhang, int64_t divisor_override, int nan_policy,
                  int64_t min_count):
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
        self.c.nan_policy = nan_policy
        self.c.min_count = min_count

    cdef int _fail(self, ap_status status, const ap_tensor_desc *t) except -1:
        """Raise for status, naming the spatial axis and argument the core says broke the rule."""
        cdef ap_error err
        if ap_pool_check(&self.c, t, NULL, &err) == AP_OK:
            _raise(status)  # not a rule of the arguments: memory, instruction set
        _raise_error(&err)

    def output_shape(self, tuple shape, layout):
        cdef ap_tensor_desc t
        cdef int64_t out[3]
        _tensor(&t, shape, self.c.rank, _layout(layout), "window_size")
        cdef ap_status s = ap_pool_output_sizes(&self.c, &t, out)
        if s != AP_OK:
            self._fail(s, &t)
        return _shape(&t, out)

    def explain(self, tuple shape, layout, dtype):
        """The kernel path a call on an input of this shape, layout and dtype takes, and why."""
        cdef ap_tensor_desc t
        cdef char buf[512]
        cdef ap_dtype code = <ap_dtype>_dtype_code_of(dtype)
        _tensor(&t, shape, self.c.rank, _layout(layout), "window_size")
        cdef ap_status s = ap_explain_pool(&self.c, &t, code, buf, sizeof(buf))
        if s != AP_OK:
            self._fail(s, &t)
        return buf.decode()

    def compile(self, tuple shape, layout, output_layout, dtype, num_threads, desc):
        """A CompiledOperator for inputs of this shape, layout and dtype, its output in
        output_layout (None: layout) (desc: for its repr)."""
        cdef CompiledOperator op = CompiledOperator.__new__(CompiledOperator)
        cdef ap_tensor_desc t
        cdef ap_error err
        cdef int code = _dtype_code_of(dtype)
        _tensor(&t, shape, self.c.rank, _layout(layout), "window_size")
        cdef int out_layout = (t.layout if output_layout is None
                               else _layout(output_layout, "output_layout"))
        cdef int nt = _threads(num_threads)
        cdef ap_status s = ap_operator_create_pool(&self.c, &t, <ap_dtype>code, nt, &op.op, &err)
        if s != AP_OK:
            if err.status != AP_OK:
                _raise_error(&err)
            _raise(s)
        op._finish(shape, <ap_layout>out_layout, dtype, nt, desc)
        return op

    def run(self, x, layout, out, num_threads):
        """Pool the ndarray x into out (or a new array); validates everything but the desc."""
        cdef cnp.ndarray a = _prepare(x)
        cdef ap_tensor_desc t
        cdef int64_t sizes[3]
        cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
        _tensor(&t, (<object>a).shape, self.c.rank, _layout(layout), "window_size")
        cdef ap_status s = ap_pool_output_sizes(&self.c, &t, sizes)
        if s != AP_OK:
            self._fail(s, &t)
        cdef int nt = _threads(num_threads)  # before allocating: a bad value costs nothing
        cdef cnp.ndarray y = _output(a, _shape(&t, sizes), out, x)
        cdef const void *xp = cnp.PyArray_DATA(a)
        cdef void *yp = cnp.PyArray_DATA(y)
        if cnp.PyArray_NBYTES(a) < _GIL_FREE_BYTES:
            s = ap_avgpool(&self.c, &t, dtype, xp, yp, nt)
        else:
            with nogil:
                s = ap_avgpool(&self.c, &t, dtype, xp, yp, nt)
        if s != AP_OK:
            self._fail(s, &t)
        return y

    def tile_input(self, tuple whole_shape, tuple out_start, tuple out_size, layout):
        """(start, size) per spatial axis of the input box the output box reads."""
        return _tile_input(&self.c, NULL, whole_shape, out_start, out_size, layout)

    def run_tile(self, x, tuple whole_shape, tuple out_start, tuple out_size, layout, out,
                 num_threads):
        """Pool the tile x (the input box of the output box) into the output box."""
        return _run_tile(&self.c, NULL, x, whole_shape, out_start, out_size, layout, out,
                         num_threads)

    def run_backward(self, gy, tuple input_shape, layout, out, num_threads):
        """The gradient with respect to an input of input_shape, from gy, the gradient with
        respect to the output (into out, or a new array)."""
        cdef cnp.ndarray a = _prepare(gy, "grad_out")
        cdef ap_tensor_desc t
        cdef int64_t sizes[3]
        cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
        _tensor(&t, input_shape, self.c.rank, _layout(layout), "window_size", "input_shape")
        cdef ap_status s = ap_pool_output_sizes(&self.c, &t, sizes)
        if s != AP_OK:
            self._fail(s, &t)
        _check_grad_shape(a, _shape(&t, sizes), input_shape)
        cdef int nt = _threads(num_threads)
        cdef cnp.ndarray y = _output(a, input_shape, out, gy, "grad_out")
        cdef const void *gp = cnp.PyArray_DATA(a)
        cdef void *xp = cnp.PyArray_DATA(y)
        if cnp.PyArray_NBYTES(y) < _GIL_FREE_BYTES:
            s = ap_avgpool_backward(&self.c, &t, dtype, gp, xp, nt)
        else:
            with nogil:
                s = ap_avgpool_backward(&self.c, &t, dtype, gp, xp, nt)
        if s != AP_OK:
            self._fail(s, &t)
        return y


cdef class AdaptiveDesc:
    """A validated ap_adaptive_desc; built by avgpool.AdaptiveAveragePoolingDesc."""
    cdef ap_adaptive_desc c

    def __cinit__(self, tuple output_sizes, int nan_policy, int64_t min_count):
        self.c.rank = len(output_sizes)
        _fill(self.c.output_sizes, output_sizes)
        self.c.nan_policy = nan_policy
        self.c.min_count = min_count

    def output_shape(self, tuple shape, layout):
        cdef ap_tensor_desc t
        cdef int64_t out[3]
        _tensor(&t, shape, self.c.rank, _layout(layout), "output_sizes")
        cdef ap_status s = ap_adaptive_output_sizes(&self.c, &t, out)
        if s != AP_OK:
            self._fail(s, &t)
        return _shape(&t, out)

    def explain(self, tuple shape, layout, dtype):
        """The kernel path a call on an input of this shape, layout and dtype takes, and why."""
        cdef ap_tensor_desc t
        cdef char buf[512]
        cdef ap_dtype code = <ap_dtype>_dtype_code_of(dtype)
        _tensor(&t, shape, self.c.rank, _layout(layout), "output_sizes")
        cdef ap_status s = ap_explain_adaptive(&self.c, &t, code, buf, sizeof(buf))
        if s != AP_OK:
            self._fail(s, &t)
        return buf.decode()

    cdef int _fail(self, ap_status status, const ap_tensor_desc *t) except -1:
        """Raise for status, naming the spatial axis and argument the core says broke the rule."""
        cdef ap_error err
        if ap_adaptive_check(&self.c, t, NULL, &err) == AP_OK:
            _raise(status)  # not a rule of the arguments: memory, instruction set
        _raise_error(&err)

    def compile(self, tuple shape, layout, output_layout, dtype, num_threads, desc):
        """A CompiledOperator for inputs of this shape, layout and dtype, its output in
        output_layout (None: layout) (desc: for its repr)."""
        cdef CompiledOperator op = CompiledOperator.__new__(CompiledOperator)
        cdef ap_tensor_desc t
        cdef ap_error err
        cdef int code = _dtype_code_of(dtype)
        _tensor(&t, shape, self.c.rank, _layout(layout), "output_sizes")
        cdef int out_layout = (t.layout if output_layout is None
                               else _layout(output_layout, "output_layout"))
        cdef int nt = _threads(num_threads)
        cdef ap_status s = ap_operator_create_adaptive(&self.c, &t, <ap_dtype>code, nt, &op.op,
                                                       &err)
        if s != AP_OK:
            if err.status != AP_OK:
                _raise_error(&err)
            _raise(s)
        op._finish(shape, <ap_layout>out_layout, dtype, nt, desc)
        return op

    def run(self, x, layout, out, num_threads):
        """Pool the ndarray x into out (or a new array); validates everything but the desc."""
        cdef cnp.ndarray a = _prepare(x)
        cdef ap_tensor_desc t
        cdef int64_t sizes[3]
        cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
        _tensor(&t, (<object>a).shape, self.c.rank, _layout(layout), "output_sizes")
        cdef ap_status s = ap_adaptive_output_sizes(&self.c, &t, sizes)
        if s != AP_OK:
            self._fail(s, &t)
        cdef int nt = _threads(num_threads)  # before allocating: a bad value costs nothing
        cdef cnp.ndarray y = _output(a, _shape(&t, sizes), out, x)
        cdef const void *xp = cnp.PyArray_DATA(a)
        cdef void *yp = cnp.PyArray_DATA(y)
        if cnp.PyArray_NBYTES(a) < _GIL_FREE_BYTES:
            s = ap_adaptive_avgpool(&self.c, &t, dtype, xp, yp, nt)
        else:
            with nogil:
                s = ap_adaptive_avgpool(&self.c, &t, dtype, xp, yp, nt)
        if s != AP_OK:
            self._fail(s, &t)
        return y


    def tile_input(self, tuple whole_shape, tuple out_start, tuple out_size, layout):
        """(start, size) per spatial axis of the input box the output box reads."""
        return _tile_input(NULL, &self.c, whole_shape, out_start, out_size, layout)

    def run_tile(self, x, tuple whole_shape, tuple out_start, tuple out_size, layout, out,
                 num_threads):
        """Pool the tile x (the input box of the output box) into the output box."""
        return _run_tile(NULL, &self.c, x, whole_shape, out_start, out_size, layout, out,
                         num_threads)

    def run_backward(self, gy, tuple input_shape, layout, out, num_threads):
        """The gradient with respect to an input of input_shape, from gy, the gradient with
        respect to the output (into out, or a new array)."""
        cdef cnp.ndarray a = _prepare(gy, "grad_out")
        cdef ap_tensor_desc t
        cdef int64_t sizes[3]
        cdef ap_dtype dtype = <ap_dtype>_dtype_code(a)
        _tensor(&t, input_shape, self.c.rank, _layout(layout), "output_sizes", "input_shape")
        cdef ap_status s = ap_adaptive_output_sizes(&self.c, &t, sizes)
        if s != AP_OK:
            self._fail(s, &t)
        _check_grad_shape(a, _shape(&t, sizes), input_shape)
        cdef int nt = _threads(num_threads)
        cdef cnp.ndarray y = _output(a, input_shape, out, gy, "grad_out")
        cdef const void *gp = cnp.PyArray_DATA(a)
        cdef void *xp = cnp.PyArray_DATA(y)
        if cnp.PyArray_NBYTES(y) < _GIL_FREE_BYTES:
            s = ap_adaptive_avgpool_backward(&self.c, &t, dtype, gp, xp, nt)
        else:
            with nogil:
                s = ap_adaptive_avgpool_backward(&self.c, &t, dtype, gp, xp, nt)
        if s != AP_OK:
            self._fail(s, &t)
        return y
