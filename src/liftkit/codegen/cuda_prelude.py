"""The CUDA C prelude: OpenCL C's names that generated code and user functions rely on.

User functions are written once, in OpenCL C (their bodies use `float4`, `.x`/`.s0` lanes,
element-wise vector arithmetic, `fma`/`fmax` on vectors, `mad`, `clamp`, `convert_int4`, ...),
and the emitter reads vectors in scalar memory with `vloadN`/`vstoreN`. CUDA C has none of that
(its own `float4` has no operators and no 8- or 16-wide forms), so the CUDA dialect starts each
translation unit with this prelude: OpenCL's vector types as `lk_vec<T, N>` (same size and
alignment as OpenCL's, 3-wide vectors taking 4 slots, so host data and aligned 16-byte accesses
are the same), named by macros after OpenCL's type names, and the built-ins as overloads.
The vector part is included only when a kernel uses vector types (it is all templates: NVRTC
instantiates what is used).
"""

from __future__ import annotations

import functools

SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double")
WIDTHS = (2, 3, 4, 8, 16)
_NAMED = "xyzw"

_CORE = r"""// liftkit CUDA prelude: OpenCL C names for CUDA C
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
template <typename T> __device__ inline T mad(T a, T b, T c) { return a * b + c; }
template <typename T> __device__ inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <typename T> __device__ inline T mix(T x, T y, T a) { return x + (y - x) * a; }
template <typename T> __device__ inline T sign(T x) { return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0); }
template <typename T> __device__ inline T step(T edge, T x) { return x < edge ? T(0) : T(1); }
template <typename T> __device__ inline T select(T a, T b, bool c) { return c ? b : a; }
__device__ inline float degrees(float x) { return x * 57.29577951308232f; }
__device__ inline float radians(float x) { return x * 0.017453292519943295f; }
__device__ inline float native_exp(float x) { return __expf(x); }
__device__ inline float native_log(float x) { return __logf(x); }
__device__ inline float native_sin(float x) { return __sinf(x); }
__device__ inline float native_cos(float x) { return __cosf(x); }
__device__ inline float native_sqrt(float x) { return sqrtf(x); }
__device__ inline float native_rsqrt(float x) { return rsqrtf(x); }
__device__ inline float native_recip(float x) { return __frcp_rn(x); }
__device__ inline float native_divide(float x, float y) { return __fdividef(x, y); }
__device__ inline float as_float(int x) { return __int_as_float(x); }
__device__ inline int as_int(float x) { return __float_as_int(x); }
"""

_VECTOR_HEAD = r"""template <typename T, int N> struct lk_vec;
#define LK_VEC_OPS(W, SLOTS) \
  static constexpr int N = W; \
  lk_vec() = default; \
  __device__ lk_vec(T a) { for (int i = 0; i < SLOTS; ++i) s[i] = a; } \
  __device__ T& operator[](int i) { return s[i]; } \
  __device__ const T& operator[](int i) const { return s[i]; } \
  LK_BIN(+) LK_BIN(-) LK_BIN(*) LK_BIN(/) LK_BIN(%) LK_BIN(&) LK_BIN(|) LK_BIN(^) \
  LK_BIN(<<) LK_BIN(>>) \
  friend __device__ lk_vec operator-(lk_vec a) { for (int i = 0; i < N; ++i) a.s[i] = -a.s[i]; return a; } \
  friend __device__ lk_vec operator+(lk_vec a) { return a; } \
  friend __device__ lk_vec operator~(lk_vec a) { for (int i = 0; i < N; ++i) a.s[i] = ~a.s[i]; return a; }
#define LK_BIN(op) \
  friend __device__ lk_vec operator op(lk_vec a, lk_vec b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b.s[i]; return a; } \
  friend __device__ lk_vec operator op(lk_vec a, T b) { for (int i = 0; i < N; ++i) a.s[i] = a.s[i] op b; return a; } \
  friend __device__ lk_vec operator op(T a, lk_vec b) { for (int i = 0; i < N; ++i) b.s[i] = a op b.s[i]; return b; } \
  __device__ lk_vec& operator op##=(lk_vec b) { for (int i = 0; i < N; ++i) s[i] = s[i] op b.s[i]; return *this; } \
  __device__ lk_vec& operator op##=(T b) { for (int i = 0; i < N; ++i) s[i] = s[i] op b; return *this; }
"""

_VECTOR_TAIL = r"""#define LK_MAP1(f) \
  template <typename T, int N> __device__ inline lk_vec<T, N> f(lk_vec<T, N> a) { \
    for (int i = 0; i < N; ++i) a.s[i] = f(a.s[i]); return a; }
#define LK_MAP2(f) \
  template <typename T, int N> __device__ inline lk_vec<T, N> f(lk_vec<T, N> a, lk_vec<T, N> b) { \
    for (int i = 0; i < N; ++i) a.s[i] = f(a.s[i], b.s[i]); return a; } \
  template <typename T, int N> __device__ inline lk_vec<T, N> f(lk_vec<T, N> a, T b) { \
    for (int i = 0; i < N; ++i) a.s[i] = f(a.s[i], b); return a; }
#define LK_MAP3(f) \
  template <typename T, int N> __device__ inline lk_vec<T, N> f(lk_vec<T, N> a, lk_vec<T, N> b, lk_vec<T, N> c) { \
    for (int i = 0; i < N; ++i) a.s[i] = f(a.s[i], b.s[i], c.s[i]); return a; } \
  template <typename T, int N> __device__ inline lk_vec<T, N> f(lk_vec<T, N> a, T b, T c) { \
    for (int i = 0; i < N; ++i) a.s[i] = f(a.s[i], b, c); return a; }
LK_MAP1(fabs) LK_MAP1(abs) LK_MAP1(sqrt) LK_MAP1(rsqrt) LK_MAP1(exp) LK_MAP1(exp2) LK_MAP1(log)
LK_MAP1(log2) LK_MAP1(sin) LK_MAP1(cos) LK_MAP1(tan) LK_MAP1(asin) LK_MAP1(acos) LK_MAP1(atan)
LK_MAP1(sinh) LK_MAP1(cosh) LK_MAP1(tanh) LK_MAP1(floor) LK_MAP1(ceil) LK_MAP1(round) LK_MAP1(trunc)
LK_MAP1(erf) LK_MAP1(erfc) LK_MAP1(sign) LK_MAP1(degrees) LK_MAP1(radians) LK_MAP1(native_exp)
LK_MAP1(native_log) LK_MAP1(native_sqrt) LK_MAP1(native_rsqrt) LK_MAP1(native_recip)
LK_MAP2(fmax) LK_MAP2(fmin) LK_MAP2(max) LK_MAP2(min) LK_MAP2(pow) LK_MAP2(hypot) LK_MAP2(atan2)
LK_MAP2(fmod) LK_MAP2(copysign) LK_MAP2(step) LK_MAP2(native_divide)
LK_MAP3(fma) LK_MAP3(mad) LK_MAP3(clamp) LK_MAP3(mix)
template <typename T, int N> __device__ inline T dot(lk_vec<T, N> a, lk_vec<T, N> b) {
  T r = a.s[0] * b.s[0]; for (int i = 1; i < N; ++i) r += a.s[i] * b.s[i]; return r; }
template <typename T, int N> __device__ inline T length(lk_vec<T, N> a) { return sqrt(dot(a, a)); }
template <typename T, int N> __device__ inline T distance(lk_vec<T, N> a, lk_vec<T, N> b) { return length(a - b); }
template <typename T, int N> __device__ inline lk_vec<T, N> normalize(lk_vec<T, N> a) { return a * rsqrt(dot(a, a)); }
template <typename R, typename T, int N> __device__ inline lk_vec<R, N> lk_convert(lk_vec<T, N> a) {
  lk_vec<R, N> r; for (int i = 0; i < N; ++i) r.s[i] = (R)a.s[i]; return r; }
"""


def _specialisation(n: int) -> str:
    slots = 4 if n == 3 else n
    lanes = [f"s{k:x}" for k in range(slots)]
    named = ", ".join(_NAMED[:n]) if n <= 4 else None
    members = [f"T s[{slots}];", f"struct {{ T {', '.join(lanes)}; }};"]
    if named:
        members.append(f"struct {{ T {named}; }};")
    params = ", ".join(f"T a{k}" for k in range(n))
    inits = " ".join(f"s[{k}] = a{k};" for k in range(n)) + (" s[3] = a2;" if n == 3 else "")
    return (f"template <typename T> struct alignas({slots} * sizeof(T)) lk_vec<T, {n}> {{\n"
            f"  union {{ {' '.join(members)} }};\n"
            f"  LK_VEC_OPS({n}, {slots})\n"
            f"  __device__ lk_vec({params}) {{ {inits} }}\n"
            "};")


def _loads(n: int) -> str:
    return (f"template <typename T> __device__ inline lk_vec<T, {n}> vload{n}(int k, const T* p) {{\n"
            f"  lk_vec<T, {n}> r; for (int i = 0; i < {n}; ++i) r.s[i] = p[k * {n} + i]; return r; }}\n"
            f"template <typename T> __device__ inline void vstore{n}(lk_vec<T, {n}> v, int k, T* p) {{\n"
            f"  for (int i = 0; i < {n}; ++i) p[k * {n} + i] = v.s[i]; }}")


def _names() -> str:
    out = []
    for t in SCALARS:
        out.append(f"#define convert_{t}(x) (({t})(x))")
        for n in WIDTHS:
            out.append(f"typedef lk_vec<{t}, {n}> lk_{t}{n};\n#define {t}{n} lk_{t}{n}\n"
                       f"#define convert_{t}{n}(v) lk_convert<{t}>(v)")
    return "\n".join(out)


@functools.cache
def prelude(vectors: bool) -> str:
    """The prelude's text: the core always, the vector types when the kernel uses any."""
    if not vectors:
        return _CORE
    parts = [_CORE, _VECTOR_HEAD] + [_specialisation(n) for n in WIDTHS] + [_VECTOR_TAIL]
    parts += [_loads(n) for n in WIDTHS] + [_names()]
    return "\n".join(p.rstrip("\n") for p in parts) + "\n"
