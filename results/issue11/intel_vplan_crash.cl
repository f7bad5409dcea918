// Intel CPU OpenCL runtime (intel-opencl-rt, libintelocl.so) segfaults building this kernel: the
// process dies in its "vplan-vec" pass on the loop ("PLEASE submit a bug report to
// https://software.intel.com/..."). Found by random programs 100721, 102022, 104828, 105803
// (a final reduceSeq(absAndSumUp) over 96 or 288 elements). Crashes at trip counts 95, 96, 288,
// float (fabs) or int (abs), any initial value; builds at 16, 32, 64, 80, a symbolic bound, or
// with `#pragma clang loop vectorize(disable)` before the loop. Oclgrind runs the programs right.
// Reproduce (status 139): python -c "import pyopencl as cl; from liftkit.backends.opencl import
//   list_devices; d = [d for d in list_devices() if d.type == 'cpu'][0]; cl.Program(cl.Context(
//   [d.cl_device]), open('results/issue11/intel_vplan_crash.cl').read()).build()"
kernel void K(const global int* restrict x, global int* out) {
  int acc = -2;
  for (int i = 0; i < 96; i += 1) { acc = acc + abs(x[i]); }
  out[0] = acc;
}
