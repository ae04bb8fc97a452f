"""No kernel reads or writes outside the buffers it is given.

Each input array is placed so that it ends exactly at a page boundary followed by a PROT_NONE
guard page, and (second run) so that it starts right after a guard page; likewise the output,
passed as ``out=``. A read past either end of the input, or a write past either end of the
output, is then a SIGSEGV. The cases run in a subprocess per layout x dtype (a crash is a test
failure, not the end of pytest) that loops over the kernel paths of this test id (the session's
``isa`` fixture: every path the CPU has, one per pass), both placements, ranks 1-3, shapes whose
rows / channel counts leave tails shorter than a vector (1..17, 31, 33, 63, 65), windows from 1
to the whole input (and 64-wide ones for the running-sum paths), strides 1-4, paddings,
dilations, explicit output sizes with count_overhang, divisor_override, adaptive output sizes
and global pooling. Every guarded result must equal, bit for bit, the same call on ordinary
arrays.

Linux only (mmap + mprotect through ctypes).
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="mmap / mprotect guard pages: Linux only")

GUARD_LIB = textwrap.dedent(r'''
    import ctypes, math, mmap, os, random, sys
    import ml_dtypes
    import numpy as np

    layout, dtype_name, isas, progress_path = sys.argv[1:5]
    isas = isas.split(",")
    DTYPE = np.dtype(ml_dtypes.bfloat16) if dtype_name == "bfloat16" else np.dtype(dtype_name)
    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.mprotect.restype = ctypes.c_int
    MAX_BYTES = 2**21


    class Arena:
        """[guard page][MAX_BYTES of data][guard page]; arrays at either end of the data."""

        def __init__(self):
            self.pages = MAX_BYTES // PAGE
            self.mm = mmap.mmap(-1, (self.pages + 2) * PAGE)
            raw = np.frombuffer(self.mm, np.uint8)
            base = raw.ctypes.data
            del raw
            for addr in (base, base + (self.pages + 1) * PAGE):
                if libc.mprotect(addr, PAGE, 0) != 0:  # PROT_NONE
                    raise OSError(ctypes.get_errno(), "mprotect")

        def array(self, shape, at_end):
            count = math.prod(shape)
            nbytes = count * DTYPE.itemsize
            assert 0 < nbytes <= MAX_BYTES
            offset = (self.pages + 1) * PAGE - nbytes if at_end else PAGE
            return np.frombuffer(self.mm, DTYPE, count, offset).reshape(shape)
''')

CHILD = GUARD_LIB + textwrap.dedent(r'''
    import avgpool
    from avgpool import _core

    IN, OUT = Arena(), Arena()
    progress = os.open(progress_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)


    def to_layout(shape_cf):
        if layout == "NCHW":
            return tuple(shape_cf)
        return (shape_cf[0],) + tuple(shape_cf[2:]) + (shape_cf[1],)


    def data(shape, seed):
        rng = np.random.default_rng(seed)
        v = rng.integers(-255, 256, size=shape) / 64.0  # exact in every dtype
        if seed % 5 == 0:  # a few non-finite values: still only inside the buffer
            flat = v.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = [np.inf, np.nan]
        return v.astype(DTYPE)


    TAILS = list(range(1, 18)) + [31, 33, 63, 65]
    rng = random.Random(f"{layout}-{dtype_name}")
    cases = []  # (shape channels-first, kind, args)


    def pool(shape, k, s=None, pb=None, pe=None, d=None, include=False, outs=None,
             overhang=False, override=None):
        r = len(k)
        s = s or (1,) * r
        pb = pb or (0,) * r
        pe = pe or (0,) * r
        d = d or (1,) * r
        for a in range(r):  # keep the floor rule valid
            ek = (k[a] - 1) * d[a] + 1
            if outs is None and shape[2 + a] + pb[a] + pe[a] < ek:
                pe = pe[:a] + (ek - shape[2 + a] - pb[a],) + pe[a + 1:]
        cases.append((tuple(shape), "pool", dict(
            window_size=tuple(k), strides=tuple(s), start_padding=tuple(pb),
            end_padding=tuple(pe), dilations=tuple(d), include_padding=include,
            output_sizes=outs, count_overhang=overhang, divisor_override=override)))


    def channels():
        return rng.choice(TAILS) if layout == "NHWC" else rng.choice([1, 2, 3])


    def small_pads(k):
        return rng.randint(0, min(2, k - 1)), rng.randint(0, min(2, k - 1))


    # rank 1: every tail length; windows 1, 2, 3, random, whole, 64-wide; strides 1-4
    for W in TAILS + [100, 130]:
        for k in sorted({1, 2, 3, rng.randint(1, W), W, min(W, 64), min(W, 33)}):
            for s in (1, 2, 3, 4):
                b, e = small_pads(k)
                pool((rng.choice([1, 1, 2]), channels(), W), (k,), (s,), (b,), (e,),
                     include=rng.random() < 0.5)
    # rank 2: tails along W, short and tall rows; windows up to the whole plane, 64-wide
    for W in TAILS + [100]:
        for H in rng.sample([1, 2, 3, 8, 9, 17, 33, 65], 3):
            C = channels()
            if H * W * C > 40000:
                C = 1
            for kh, kw in {(1, 1), (2, 2), (3, 3), (H, W), (min(H, 9), min(W, 64)),
                           (rng.randint(1, H), rng.randint(1, W))}:
                s = (rng.randint(1, 4), rng.randint(1, 4))
                (b0, e0), (b1, e1) = small_pads(kh), small_pads(kw)
                pool((1, C, H, W), (kh, kw), s, (b0, b1), (e0, e1), include=rng.random() < 0.5)
    # rank 3
    for _ in range(250):
        D, H, W = rng.choice(TAILS[:9]), rng.choice(TAILS[:12]), rng.choice(TAILS)
        C = channels()
        if D * H * W * C > 40000:
            C = 1
        k = (rng.randint(1, D), rng.randint(1, H), rng.randint(1, W))
        if rng.random() < 0.3:
            k = (D, H, W)
        pool((1, C, D, H, W), k, tuple(rng.randint(1, 4) for _ in range(3)),
             tuple(rng.randint(0, min(2, x - 1)) for x in k),
             tuple(rng.randint(0, min(2, x - 1)) for x in k), include=rng.random() < 0.5)
    # dilations, explicit output sizes (count_overhang: windows past the padded end),
    # divisor_override, empty windows (padding >= window)
    for _ in range(500):
        r = rng.randint(1, 3)
        sp = tuple(rng.choice(TAILS[:12] if r > 1 else TAILS) for _ in range(r))
        k = tuple(rng.randint(1, min(x, 5)) for x in sp)
        s = tuple(rng.randint(1, 4) for _ in range(r))
        d = tuple(rng.randint(1, 3) for _ in range(r))
        pb = tuple(rng.randint(0, 4) for _ in range(r))
        pe = tuple(rng.randint(0, 4) for _ in range(r))
        kind = rng.randint(0, 2)
        shape = (1, channels()) + sp
        if kind == 0:
            pool(shape, k, s, pb, pe, d, include=rng.random() < 0.5,
                 override=rng.choice([None, 3, -2]))
        else:
            ek = [(k[a] - 1) * d[a] + 1 for a in range(r)]
            floor = [max(1, (sp[a] + pb[a] + pe[a] - ek[a]) // s[a] + 1) for a in range(r)]
            outs = tuple(f + rng.randint(0, 2) for f in floor)
            pool(shape, k, s, pb, pe, d, include=rng.random() < 0.5, outs=outs, overhang=True)
    # adaptive (out < in, = in, > in) and global pooling
    for _ in range(600):
        r = rng.randint(1, 3)
        sp = tuple(rng.choice(TAILS if r < 3 else TAILS[:12]) for _ in range(r))
        outs = tuple(rng.choice([1, 2, max(1, n - 1), n, n + 1, 2 * n + 1]) for n in sp)
        if rng.random() < 0.25:
            outs = (1,) * r  # global
        cases.append(((rng.choice([1, 2]), channels()) + sp, "adaptive", dict(sizes=outs)))
    for W in TAILS:  # global pooling of planes with every tail
        for sp in ((W,), (rng.choice(TAILS), W), (2, 3, W)):
            cases.append(((1, channels()) + sp, "adaptive", dict(sizes=(1,) * len(sp))))
            cases.append(((1, channels()) + sp, "pool", dict(window_size=sp)))


    def run(shape_cf, kind, args, x, out, nt):
        if kind == "pool":
            desc = avgpool.AveragePoolingDesc(**args)
            return avgpool.average_pool(x, desc, layout=layout, out=out, num_threads=nt)
        return avgpool.adaptive_average_pool(x, args["sizes"], layout=layout, out=out,
                                             num_threads=nt)


    def same(a, b):
        return a.shape == b.shape and a.tobytes() == b.tobytes()


    total = 0
    for isa in isas:
        _core.set_isa(isa)
        for i, (shape_cf, kind, args) in enumerate(cases):
            shape = to_layout(shape_cf)
            values = data(shape, i)
            nt = rng.choice([None, 1, 2, 4])
            want = run(shape_cf, kind, args, values.copy(), None, nt)
            if want.nbytes > MAX_BYTES or values.nbytes > MAX_BYTES:
                continue
            for at_end in (True, False):
                msg = (f"isa={isa} case={i} {kind} shape={shape} layout={layout} {args} "
                       f"num_threads={nt} placement={'end' if at_end else 'start'}")
                os.pwrite(progress, msg.encode().ljust(600), 0)
                x = IN.array(shape, at_end)
                x[...] = values
                out = OUT.array(want.shape, at_end)
                out.view(np.uint8)[...] = 0xA5
                got = run(shape_cf, kind, args, x, out, nt)
                if got is not out or not same(got, want) or not same(x, values):
                    print("MISMATCH:", msg, file=sys.stderr)
                    sys.exit(1)
                del x, out, got
                total += 1
    print(f"ok {total} guarded calls, {len(cases)} cases")
''')

DTYPES = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize("where", ["after", "before"])
def test_guard_pages_trap(where, tmp_path):
    """The harness itself: touching the byte just past the end (or before the start) of a
    guarded array kills the child with SIGSEGV."""
    code = GUARD_LIB + textwrap.dedent(f'''
        a = Arena().array((3, 5), at_end={where == "after"})
        addr = a.ctypes.data + (a.nbytes if {where == "after"} else -1)
        print("reading", flush=True)
        ctypes.string_at(addr, 1)
        print("no fault")
    ''')
    proc = subprocess.run([sys.executable, "-c", code, "NCHW", "float32", "scalar",
                           str(tmp_path / "p")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -11 and proc.stdout == "reading\n", (proc.returncode, proc.stdout,
                                                                   proc.stderr[-2000:])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_guard_pages(layout, dtype, isa, tmp_path):
    progress = tmp_path / "progress.txt"
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", CHILD, layout, dtype, isa, str(progress)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    last = progress.read_text().strip() if progress.exists() else ""
    assert proc.returncode == 0, (
        f"guard-page child exited with {proc.returncode} "
        f"({'SIGSEGV: an access outside the buffers' if proc.returncode == -11 else 'error'}); "
        f"last case: {last}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-4000:]}")
    assert proc.stdout.startswith("ok "), proc.stdout
