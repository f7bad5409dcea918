"""Does NVRTC break NVIDIA's OpenCL compiler in the same process? Each case runs in a fresh
process: NVRTC is touched as the case says, then an NVIDIA OpenCL program is built.

    import          `import cuda.bindings.nvrtc`, no call
    load            nvrtcVersion + nvrtcGetSupportedArchs in this process (loads libnvrtc)
    direct_sm90a    nvrtcCompileProgram -arch=sm_90a in this process (the old compile_cuda)
    direct_sm90     ... -arch=sm_90
    direct_compute  ... -arch=compute_90a
    clfirst_direct  an OpenCL build first, then direct_sm90a
    server          liftkit's compile_cuda (the NVRTC compile server), sm_90a
    server_compute  compile_cuda, compute_90a
    clfirst_server  an OpenCL build first, then compile_cuda sm_90a, then arch_for/nvrtc_version

    python3 results/issue12/clash.py
"""
import subprocess
import sys

CASE = r'''
import sys
mode = sys.argv[1]
src = 'extern "C" __global__ void k(float* a){ a[threadIdx.x] += 1.0f; }'
import pyopencl as cl
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
ctx = cl.Context([plat.get_devices()[0]])

def direct(arch):
    from cuda.bindings import nvrtc
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"k.cu", 0, [], [])
    opts = [f"-arch={arch}".encode()]
    assert nvrtc.nvrtcCompileProgram(prog, 1, opts)[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    nvrtc.nvrtcDestroyProgram(prog)

if mode.startswith("clfirst"):
    cl.Program(ctx, "kernel void w(global float* a){a[0]=1.0f;}").build()
if mode == "import":
    import cuda.bindings.nvrtc
elif mode == "load":
    from cuda.bindings import nvrtc
    nvrtc.nvrtcVersion(); nvrtc.nvrtcGetSupportedArchs()
elif mode in ("direct_sm90a", "clfirst_direct"):
    direct("sm_90a")
elif mode == "direct_sm90":
    direct("sm_90")
elif mode == "direct_compute":
    direct("compute_90a")
else:
    from liftkit.backends.cuda.nvrtc import arch_for, compile_cuda, nvrtc_version
    out = compile_cuda(src, "compute_90a" if mode == "server_compute" else "sm_90a")
    assert out.ptx and (mode == "server_compute" or out.cubin)
    arch_for((9, 0)); nvrtc_version()
loaded = "libnvrtc" in open("/proc/self/maps").read()
try:
    cl.Program(ctx, "kernel void v(global float* a){a[1]=2.0f;}").build()
    print(f"{mode:15s} OK    libnvrtc mapped: {loaded}")
except Exception as e:
    print(f"{mode:15s} FAIL  libnvrtc mapped: {loaded}  {str(e).splitlines()[-3:]}")
'''
for mode in ["import", "load", "direct_sm90a", "direct_sm90", "direct_compute", "clfirst_direct",
             "server", "server_compute", "clfirst_server"]:
    r = subprocess.run([sys.executable, "-c", CASE, mode], capture_output=True, text=True)
    print((r.stdout + r.stderr[-300:]).strip(), flush=True)
