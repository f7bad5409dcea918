float4 updateF(float4 f, float4 p, float4 q, float cutsq, float lj1, float lj2) {
  const float dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
  const float r2 = dx * dx + dy * dy + dz * dz;
  if (r2 < cutsq) {
    const float r2inv = 1.0f / r2;
    const float r6inv = r2inv * r2inv * r2inv;
    const float force = r2inv * r6inv * (lj1 * r6inv - lj2);
    f.x += dx * force; f.y += dy * force; f.z += dz * force;
  }
  return f;
}

kernel void KERNEL(
    const global float* restrict ps,
    const global int* restrict nbhs,
    float cutsq,
    float lj1,
    float lj2,
    global float* out,
    int M,
    int N) {
  for (int gl_id = get_global_id(1); gl_id < N/16; gl_id += get_global_size(1)) {
    if (get_global_id(0) == 0) {
      for (int i = 0; i < 4; i += 1) {
        for (int i_2 = 0; i_2 < 4; i_2 += 1) {
          float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
          for (int i_3 = 0; i_3 < M; i_3 += 1) {
            int idx = nbhs[16*gl_id*M + 4*i*M + i_2*M + i_3];
            acc = updateF(acc, ((const global float4*)ps)[16*gl_id + 4*i + i_2], ((const global float4*)ps)[idx], cutsq, lj1, lj2);
          }
          ((global float4*)out)[16*gl_id + 4*i + i_2] = acc;
        }
      }
    }
  }
}
