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
  for (int wg_id = get_group_id(1); wg_id < N/64; wg_id += get_num_groups(1)) {
    for (int wg_id_2 = get_group_id(0); wg_id_2 < 16; wg_id_2 += get_num_groups(0)) {
      int l_id = get_local_id(0);
      float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
      for (int i = 0; i < M; i += 1) {
        int idx = nbhs[i + l_id*M + 64*M*wg_id + 4*M*wg_id_2];
        acc = updateF(acc, ((const global float4*)ps)[l_id + 64*wg_id + 4*wg_id_2], ((const global float4*)ps)[idx], cutsq, lj1, lj2);
      }
      ((global float4*)out)[l_id + 64*wg_id + 4*wg_id_2] = acc;
    }
  }
}
