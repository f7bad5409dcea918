"""Why "the GEMV kernel takes 43 µs" at 1024² float32: a read-only kernel (4 MB, float16 loads,
256 work-items) on the CPU device, six buffers, with NumPy's A @ x run between rounds. Under
NumPy's default two OpenBLAS threads (which spin after each call, holding a core) the OpenCL
runtime's two threads read at half speed; with OPENBLAS_NUM_THREADS=1 they do not.

    OPENBLAS_NUM_THREADS=1 python results/issue15/cpu-final/spin_read.py   # ~24 µs
    python results/issue15/cpu-final/spin_read.py                          # ~44 µs
"""
import statistics, numpy as np, pyopencl as cl, warnings, time
warnings.simplefilter("ignore")
from liftkit.blas import Session
s = Session("cpu", warn=False); ctx = s.context
pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
rd = """kernel void g(const global float16* restrict A, global float* o, int N16, int R) {
  int g = get_global_id(0); float16 acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
  const global float16* p = A + (size_t)g*R*N16;
  for (int i = 0; i < R*N16; i += 4) { acc0 += p[i]; acc1 += p[i+1]; acc2 += p[i+2]; acc3 += p[i+3]; }
  float16 a = acc0+acc1+acc2+acc3; o[g] = a.s0+a.s1+a.s2+a.s3+a.s4+a.s5+a.s6+a.s7+a.s8+a.s9+a.sa+a.sb+a.sc+a.sd+a.se+a.sf;
}"""
k = cl.Program(ctx, rd).build().g
mf = cl.mem_flags; n = 1024
o = cl.Buffer(ctx, mf.READ_WRITE, 4*n)
bufs = [cl.Buffer(ctx, (mf.READ_ONLY if i < 3 else mf.READ_WRITE) | mf.COPY_HOST_PTR, hostbuf=(np.ones if i % 2 == 0 else lambda s, d: np.random.default_rng(0).uniform(-1,1,s).astype(d))((n,n),np.float32)) for i in range(6)]
def kt(b, reps=31):
    ts=[]
    for i in range(reps):
        k.set_args(b,o,np.int32(n//16),np.int32(4)); ev=cl.enqueue_nd_range_kernel(pq,k,(n//4,),None); ev.wait(); ts.append((ev.profile.end-ev.profile.start)*1e-3)
    return statistics.median(ts[3:])
res = {}
An = np.ones((n,n),np.float32); x=np.ones(n,np.float32)
for rnd in range(5):
    for i,b in enumerate(bufs): res.setdefault(i,[]).append(kt(b))
    for i in range(20): An@x
print({i: round(statistics.median(v),1) for i,v in res.items()}, "(0-2 READ_ONLY, 3-5 READ_WRITE)")
