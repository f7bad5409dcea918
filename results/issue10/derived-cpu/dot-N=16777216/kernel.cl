float8 mult8(float8 x, float8 y) {
  return x * y;
}
float8 add8(float8 x, float8 y) {
  return x + y;
}

kernel void KERNEL_0(
    const global float* restrict x,
    const global float* restrict y,
    global float* out,
    int N) {
  float8 acc = (float8)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
  for (int i = 0; i < N/8; i += 1) {
    float8 v = mult8(((const global float8*)x)[i], ((const global float8*)y)[i]);
    acc = add8(acc, v);
  }
  ((global float8*)out)[0] = acc;
}


float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_1(
    const global float* restrict stage0,
    global float* out,
    int N) {
  float acc = 0.0f;
  for (int i = 0; i < 8; i += 1) {
    acc = add(acc, stage0[i]);
  }
  out[0] = acc;
}
