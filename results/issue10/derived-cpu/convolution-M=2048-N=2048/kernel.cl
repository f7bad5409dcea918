float mult(float x, float y) {
  return x * y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL(
    const global float* restrict img,
    const global float* restrict w,
    global float* out,
    int M,
    int N) {
  for (int i = 0; i < 2048*(M/2048); i += 1) {
    for (int i_2 = 0; i_2 < N; i_2 += 1) {
      float acc = 0.0f;
      for (int i_3 = 0; i_3 < 9; i_3 += 1) {
        float v = mult(img[N*min(2048*(M/2048) - 1, max(0, i + i_3/3 - 1)) + min(N - 1, max(0, i_2 + i_3 % 3 - 1))], w[i_3]);
        acc = add(acc, v);
      }
      out[i*N + i_2] = acc;
    }
  }
}
