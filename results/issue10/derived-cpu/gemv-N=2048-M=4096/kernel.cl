float mult(float x, float y) {
  return x * y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_0(
    const global float* restrict A,
    const global float* restrict x,
    float alpha,
    global float* out,
    int M,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < N; gl_id += get_global_size(0)) {
    if (get_global_id(1) == 0) {
      float acc = 0.0f;
      for (int i = 0; i < M; i += 1) {
        float v = mult(A[gl_id*M + i], x[i]);
        acc = add(acc, v);
      }
      out[gl_id] = mult(alpha, acc);
    }
  }
}


float mult(float x, float y) {
  return x * y;
}

kernel void KERNEL_1(
    const global float* restrict y,
    float beta,
    global float* out,
    int M,
    int N) {
  for (int i = 0; i < N; i += 1) {
    out[i] = mult(beta, y[i]);
  }
}


float2 add2(float2 x, float2 y) {
  return x + y;
}

kernel void KERNEL_2(
    const global float* restrict stage0,
    const global float* restrict stage1,
    global float* out,
    int M,
    int N) {
  for (int i = 0; i < N/2; i += 1) {
    ((global float2*)out)[i] = add2(((const global float2*)stage0)[i], ((const global float2*)stage1)[i]);
  }
}
