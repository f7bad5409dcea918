"""gemv-row-blocks' kernels with the fused step (one fma per vector, what the rule derives now)
beside the separate multiply and add it derived before (the same source with the step as
`v = a * b; acc + v`, which Intel's compiler does not contract), r = 2, 4, 8, w = 16, in
alternating rounds of one process; kernel time by OpenCL profiling, median of rounds.

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float32 5
    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float64 3
    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float32 5 T   # column-blocks, k = r
    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float64 5 T 8 # vectors of 8
"""
import statistics, numpy as np, pyopencl as cl, warnings, time, sys
warnings.simplefilter("ignore")
from liftkit.blas import Kind, Session
from liftkit.blas.codelets import Variant
dtn = sys.argv[1]; dt = np.dtype(dtn)
lay = sys.argv[3] if len(sys.argv) > 3 else "N"
W = int(sys.argv[4]) if len(sys.argv) > 4 else 16  # vector width
codelet, par, per_item = ("row-blocks", "r", 1) if lay == "N" else ("column-blocks", "k", W)
s = Session("cpu", warn=False); ctx = s.context
pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
rs = (2,4,8)
src = {}
for r in rs:
    for n in (1024,):
        src[("fused",r)] = s.kernel(Kind("gemv",dtn,lay),{"M":n,"N":n},Variant.of(codelet,**{par: r},w=W)).compiled.kernels[0]
T = "float" if dtn == "float32" else "double"
V = f"{T}{W}"
sep_def = (f"{V} sepAcc({V} acc, {V} a, {V} b) {{ {V} v = a * b; return acc + v; }}\n"
           f"{V} sepAccB({V} acc, {V} a, {T} b) {{ {V} v = a * b; return acc + v; }}\n")
fun = f"fmaAcc{W}_{T}(tmp" if lay == "N" else f"fmaAccB{W}_{T}(tmp"
srcs = {}
for r in rs:
    k = src[("fused",r)]
    srcs[("fused",r)] = (k.source, k.name)
    srcs[("sep",r)] = (sep_def + k.source.replace(fun, "sepAcc(tmp" if lay == "N" else "sepAccB(tmp"), k.name)
    assert "sepAcc" in srcs[("sep",r)][0].split("kernel void")[1]
ks = {k: getattr(cl.Program(ctx, v).build(), nm) for k, (v, nm) in srcs.items()}
mf = cl.mem_flags
for n in (1024, 2048):
    An = np.random.default_rng(0).uniform(-1,1,(n,n)).astype(dt); xn=np.random.default_rng(1).uniform(-1,1,n).astype(dt)
    A = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=An); x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xn)
    y = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.zeros(n,dt)); o = cl.Buffer(ctx, mf.READ_WRITE, dt.itemsize*n)
    res={}
    for rnd in range(int(sys.argv[2]) if len(sys.argv)>2 else 7):
        for (nm,r),k in ks.items():
            ts=[]
            for i in range(21):
                k.set_args(A,x,y,dt.type(1),dt.type(0),o,np.int32(n),np.int32(n)); ev=cl.enqueue_nd_range_kernel(pq,k,(n//(r*per_item),),None); ev.wait(); ts.append((ev.profile.end-ev.profile.start)*1e-3)
            res.setdefault((nm,r),[]).append(statistics.median(ts[3:]))
            if rnd == 0:
                out=np.empty(n,dt); cl.enqueue_copy(pq,out,o); assert np.allclose(out, (An if lay == "N" else An.T).astype(float)@xn, rtol=1e-4, atol=1e-3)
    print(dtn, lay, n, "kernel µs, median of rounds:", " ".join(f"{nm}(r={r}) {statistics.median(v):.1f}" for (nm,r),v in sorted(res.items(), key=lambda t:(t[0][1],t[0][0]))))
