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
  for (int gl_id = get_global_id(1); gl_id < M; gl_id += get_global_size(1)) {
    for (int gl_id_2 = get_global_id(0); gl_id_2 < N; gl_id_2 += get_global_size(0)) {
      float acc = 0.0f;
      for (int i = 0; i < 9; i += 1) {
        float v = mult(img[N*min(M - 1, max(0, gl_id + i/3 - 1)) + min(N - 1, max(0, gl_id_2 + i % 3 - 1))], w[i]);
        acc = add(acc, v);
      }
      out[gl_id*N + gl_id_2] = acc;
    }
  }
}
