typedef struct { float _0; float _1; } Tuple2_float_float;
Tuple2_float_float BSComputation(float r) {
  typedef Tuple2_float_float Tuple;
  const float S = 10.0f * r + 100.0f * (1.0f - r);
  const float K = 10.0f * r + 100.0f * (1.0f - r) * 0.9f;
  const float T = 1.0f * r + 10.0f * (1.0f - r);
  const float R = 0.01f * r + 0.05f * (1.0f - r);
  const float V = 0.01f * r + 0.10f * (1.0f - r);
  const float sqrtT = sqrt(T);
  const float d1 = (log(S / K) + (R + 0.5f * V * V) * T) / (V * sqrtT);
  const float d2 = d1 - V * sqrtT;
  float c1, c2;
  {
    const float k = 1.0f / (1.0f + 0.2316419f * fabs(d1));
    c1 = 0.3989422804f * exp(-0.5f * d1 * d1) * (k * (0.31938153f + k * (-0.356563782f
         + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f)))));
    if (d1 > 0.0f) c1 = 1.0f - c1;
  }
  {
    const float k = 1.0f / (1.0f + 0.2316419f * fabs(d2));
    c2 = 0.3989422804f * exp(-0.5f * d2 * d2) * (k * (0.31938153f + k * (-0.356563782f
         + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f)))));
    if (d2 > 0.0f) c2 = 1.0f - c2;
  }
  const float expRT = exp(-R * T);
  Tuple res = {S * c1 - K * expRT * c2, K * expRT * (1.0f - c2) - S * (1.0f - c1)};
  return res;
}

kernel void KERNEL(
    const global float* restrict s,
    global Tuple2_float_float* out,
    int N) {
  for (int wg_id = get_group_id(0); wg_id < N/1024; wg_id += get_num_groups(0)) {
    for (int l_id = get_local_id(0); l_id < 512; l_id += 256) {
      for (int i = 0; i < 2; i += 1) {
        out[i + 2*l_id + 1024*wg_id] = BSComputation(s[i + 2*l_id + 1024*wg_id]);
      }
    }
  }
}
