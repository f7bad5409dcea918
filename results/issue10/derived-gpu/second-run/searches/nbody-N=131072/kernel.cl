typedef struct { float4 _0; float4 _1; } Tuple2_float4_float4;
float4 id_float4(float4 x) {
  return x;
}
float4 calcAcc(float4 acc, float4 p, float4 q, float espSqr) {
  const float rx = q.x - p.x, ry = q.y - p.y, rz = q.z - p.z;
  const float distSqr = rx * rx + ry * ry + rz * rz + espSqr;
  const float invDist = rsqrt(distSqr);
  const float s = q.w * invDist * invDist * invDist;
  acc.x += s * rx; acc.y += s * ry; acc.z += s * rz;
  return acc;
}
Tuple2_float4_float4 update(float4 p, float4 v, float dt, float4 acc) {
  typedef Tuple2_float4_float4 Tuple;
  float4 np = p + v * dt + acc * (0.5f * dt * dt);
  np.w = p.w;
  float4 nv = v + acc * dt;
  nv.w = v.w;
  Tuple res = {np, nv};
  return res;
}

kernel void KERNEL(
    const global float* restrict pos,
    const global float* restrict vel,
    float espSqr,
    float dt,
    global Tuple2_float4_float4* out,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < N; gl_id += get_global_size(0)) {
    float4 v = id_float4(((const global float4*)pos)[gl_id]);
    float4 v_2 = id_float4(((const global float4*)vel)[gl_id]);
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < N; i += 1) {
      acc = calcAcc(acc, v, ((const global float4*)pos)[i], espSqr);
    }
    out[gl_id] = update(v, v_2, dt, acc);
  }
}
