float2 mult2(float2 x, float2 y) {
  return x * y;
}

kernel void KERNEL(
    float a,
    const global float* restrict x,
    global float* out,
    int N) {
  for (int i = 0; i < N/2; i += 1) {
    float2 b = (float2)(a);
    ((global float2*)out)[i] = mult2(b, ((const global float2*)x)[i]);
  }
}
