float id(float x) {
  return x;
}
float2 qTerm(float sX, float sY, float sZ, float4 k) {
  const float expArg = 6.2831853071795864769252867665590058f * (k.x * sX + k.y * sY + k.z * sZ);
  return (float2)(k.w * cos(expArg), k.w * sin(expArg));
}
float2 add2(float2 x, float2 y) {
  return x + y;
}

kernel void KERNEL(
    const global float* restrict x,
    const global float* restrict y,
    const global float* restrict z,
    const global float* restrict kvals,
    global float* out,
    int K,
    int X) {
  for (int gl_id = get_global_id(0); gl_id < X; gl_id += get_global_size(0)) {
    float v = id(x[gl_id]);
    float v_2 = id(y[gl_id]);
    float v_3 = id(z[gl_id]);
    float2 acc = (float2)(0.0f, 0.0f);
    for (int i = 0; i < K; i += 1) {
      float2 v_4 = qTerm(v, v_2, v_3, ((const global float4*)kvals)[i]);
      acc = add2(acc, v_4);
    }
    ((global float2*)out)[gl_id] = acc;
  }
}
