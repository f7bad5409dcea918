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
  for (int gl_id = get_global_id(1); gl_id < M; gl_id += get_global_size(1)) {
    float acc = 0.0f;
    for (int i = 0; i < N; i += 1) {
      float v = mult(A[gl_id*N + i], x[i]);
      acc = add(acc, v);
    }
    out[gl_id] = acc;
  }
}


float4 mult4(float4 x, float4 y) {
  return x * y;
}
float4 add4(float4 x, float4 y) {
  return x + y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_1(
    const global float* restrict A,
    const global float* restrict stage0,
    global float* out,
    int M,
    int N) {
  for (int wg_id = get_group_id(1); wg_id < N/1024; wg_id += get_num_groups(1)) {
    if (get_group_id(0) == 0) {
      for (int i = 0; i < 16; i += 1) {
        int l_id = get_local_id(0);
        if (get_local_id(1) == 0) {
          float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
          for (int i_2 = 0; i_2 < M/4; i_2 += 1) {
            float4 v = mult4((float4)(A[64*i + 4*i_2*N + l_id + 1024*wg_id], A[64*i + 4*i_2*N + l_id + N + 1024*wg_id], A[64*i + 4*i_2*N + l_id + 2*N + 1024*wg_id], A[64*i + 4*i_2*N + l_id + 3*N + 1024*wg_id]), ((const global float4*)stage0)[i_2]);
            acc = add4(acc, v);
          }
          float acc_2 = 0.0f;
          for (int i_3 = 0; i_3 < 4; i_3 += 1) {
            acc_2 = add(acc_2, ((private float*)&acc)[i_3]);
          }
          out[64*i + l_id + 1024*wg_id] = acc_2;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
      }
    }
  }
}
