float8 abs8(float8 x) {
  return fabs(x);
}
float8 add8(float8 x, float8 y) {
  return x + y;
}

kernel void KERNEL_0(
    const global float* restrict x,
    global float* out,
    int N) {
  for (int wg_id = get_group_id(0); wg_id < N/8192; wg_id += get_num_groups(0)) {
    float8 acc = (float8)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < 1024; i += 1) {
      float8 v = abs8(vload8(i + 1024*wg_id, x));
      acc = add8(acc, v);
    }
    vstore8(acc, wg_id, out);
  }
}


float8 add8(float8 x, float8 y) {
  return x + y;
}

kernel void KERNEL_1(
    const global float* restrict stage0,
    global float* out,
    int N) {
  float8 acc = (float8)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
  for (int i = 0; i < N/8192; i += 1) {
    acc = add8(acc, vload8(i, stage0));
  }
  vstore8(acc, 0, out);
}


float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_2(
    const global float* restrict stage1,
    global float* out,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < 2; gl_id += get_global_size(0)) {
    float acc = 0.0f;
    for (int i = 0; i < 4; i += 1) {
      acc = add(acc, stage1[4*gl_id + i]);
    }
    out[gl_id] = acc;
  }
}


float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_3(
    const global float* restrict stage2,
    global float* out,
    int N) {
  float acc = 0.0f;
  for (int i = 0; i < 2; i += 1) {
    acc = add(acc, stage2[i]);
  }
  out[0] = acc;
}
