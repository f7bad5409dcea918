float mult(float x, float y) {
  return x * y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_0(
    const global float* restrict A,
    const global float* restrict x,
    global float* out,
    int M,
    int N) {
  for (int wg_id = get_group_id(1); wg_id < M; wg_id += get_num_groups(1)) {
    float acc = 0.0f;
    for (int i = 0; i < N; i += 1) {
      float v = mult(A[i + N*wg_id], x[i]);
      acc = add(acc, v);
    }
    out[wg_id] = acc;
  }
}


float mult(float x, float y) {
  return x * y;
}

kernel void KERNEL_1(
    float alpha,
    const global float* restrict stage0,
    global float* out,
    int M,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < M; gl_id += get_global_size(0)) {
    out[gl_id] = mult(alpha, stage0[gl_id]);
  }
}


float mult(float x, float y) {
  return x * y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_2(
    const global float* restrict B,
    const global float* restrict x,
    global float* out,
    int M,
    int N) {
  for (int wg_id = get_group_id(0); wg_id < M; wg_id += get_num_groups(0)) {
    if (get_local_id(1) == 0) {
      float acc = 0.0f;
      for (int i = 0; i < N; i += 1) {
        float v = mult(B[i + N*wg_id], x[i]);
        acc = add(acc, v);
      }
      out[wg_id] = acc;
    }
  }
}


float mult(float x, float y) {
  return x * y;
}

kernel void KERNEL_3(
    float beta,
    const global float* restrict stage2,
    global float* out,
    int M,
    int N) {
  for (int gl_id = get_global_id(1); gl_id < M; gl_id += get_global_size(1)) {
    out[gl_id] = mult(beta, stage2[gl_id]);
  }
}


float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_4(
    const global float* restrict stage1,
    const global float* restrict stage3,
    global float* out,
    int M,
    int N) {
  for (int wg_id = get_group_id(0); wg_id < M; wg_id += get_num_groups(0)) {
    out[wg_id] = add(stage1[wg_id], stage3[wg_id]);
  }
}
