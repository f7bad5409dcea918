typedef struct { float _0; int _1; int _2; } Tuple3_float_int_int;
float sqDiff(float a, float b) {
  return (a - b) * (a - b);
}
float add(float x, float y) {
  return x + y;
}
Tuple3_float_int_int test(float dist, Tuple3_float_int_int t) {
  typedef Tuple3_float_int_int Tuple;
  if (dist < t._0) { Tuple r = {dist, t._1 + 1, t._1}; return r; }
  Tuple r = {t._0, t._1 + 1, t._2};
  return r;
}
int select_(Tuple3_float_int_int t) {
  return t._2;
}

kernel void KERNEL(
    const global float* restrict features,
    const global float* restrict clusters,
    global int* out,
    int C,
    int F,
    int P) {
  for (int gl_id = get_global_id(0); gl_id < P; gl_id += get_global_size(0)) {
    Tuple3_float_int_int acc = (Tuple3_float_int_int){3.4028234663852886e+38f, 0, 0};
    for (int i = 0; i < C; i += 1) {
      float acc_2 = 0.0f;
      for (int i_2 = 0; i_2 < F; i_2 += 1) {
        float v = sqDiff(features[gl_id + i_2*P], clusters[F*i + i_2]);
        acc_2 = add(acc_2, v);
      }
      int idx = 0;
      acc = test(acc_2, acc);
    }
    if (get_global_id(1) == 0) {
      out[gl_id] = select_(acc);
    }
  }
}
