float16 mult16(float16 x, float16 y) {
  return x * y;
}
float16 add16(float16 x, float16 y) {
  return x + y;
}
float add(float x, float y) {
  return x + y;
}
float mult(float x, float y) {
  return x * y;
}

kernel void KERNEL(
    const global float* restrict A,
    const global float* restrict x,
    const global float* restrict y,
    float alpha,
    float beta,
    global float* out,
    int M,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < N; gl_id += get_global_size(0)) {
    float16 acc = (float16)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < M/16; i += 1) {
      float16 v = mult16(((const global float16*)A)[i + gl_id*M/16], ((const global float16*)x)[i]);
      acc = add16(acc, v);
    }
    float acc_2 = 0.0f;
    for (int i_2 = 0; i_2 < 16; i_2 += 1) {
      acc_2 = add(acc_2, ((private float*)&acc)[i_2]);
    }
    float v_2 = mult(alpha, acc_2);
    float v_3 = mult(beta, y[gl_id]);
    out[gl_id] = add(v_2, v_3);
  }
}
