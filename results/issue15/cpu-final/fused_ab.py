"""gemv-row-blocks' kernels with the fused step (one fma per vector, what the rule derives now)
beside the separate multiply and add it derived before (the same source with the step as
`v = a * b; acc + v`, which Intel's compiler does not contract), r = 2, 4, 8, w = 16, in
alternating rounds of one process; kernel time by OpenCL profiling, median of rounds.

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float32 5
    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/fused_ab.py float64 3
"""
import statistics, numpy as np, pyopencl as cl, warnings, time, sys
warnings.simplefilter("ignore")
from liftkit.blas import Kind, Session
from liftkit.blas.codelets import Variant
dtn = sys.argv[1]; dt = np.dtype(dtn)
s = Session("cpu", warn=False); ctx = s.context
pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
rs = (2,4,8)
src = {}
for r in rs:
    for n in (1024,):
        src[("fused",r)] = s.kernel(Kind("gemv",dtn,"N"),{"M":n,"N":n},Variant.of("row-blocks",r=r,w=16)).compiled.kernels[0]
T = "float" if dtn == "float32" else "double"
sep_def = f"{T}16 sepAcc({T}16 acc, {T}16 a, {T}16 b) {{ {T}16 v = a * b; return acc + v; }}\n"
srcs = {}
for r in rs:
    k = src[("fused",r)]
    srcs[("fused",r)] = (k.source, k.name)
    srcs[("sep",r)] = (sep_def + k.source.replace(f"fmaAcc16_{T}(tmp", "sepAcc(tmp"), k.name)
    assert "sepAcc(tmp" in srcs[("sep",r)][0]
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
                k.set_args(A,x,y,dt.type(1),dt.type(0),o,np.int32(n),np.int32(n)); ev=cl.enqueue_nd_range_kernel(pq,k,(n//r,),None); ev.wait(); ts.append((ev.profile.end-ev.profile.start)*1e-3)
            res.setdefault((nm,r),[]).append(statistics.median(ts[3:]))
            if rnd == 0:
                out=np.empty(n,dt); cl.enqueue_copy(pq,out,o); assert np.allclose(out, An.astype(float)@xn, rtol=1e-4, atol=1e-3)
    print(dtn, n, "kernel µs, median of rounds:", " ".join(f"{nm}(r={r}) {statistics.median(v):.1f}" for (nm,r),v in sorted(res.items(), key=lambda t:(t[0][1],t[0][0]))))
