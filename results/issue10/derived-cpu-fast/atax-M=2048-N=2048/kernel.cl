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
  for (int wg_id = get_group_id(0); wg_id < M/2; wg_id += get_num_groups(0)) {
    int l_id = get_local_id(1);
    float acc = 0.0f;
    for (int i = 0; i < N; i += 1) {
      float v = mult(A[i + l_id*N + 2*N*wg_id], x[i]);
      acc = add(acc, v);
    }
    out[l_id + 2*wg_id] = acc;
    barrier(CLK_GLOBAL_MEM_FENCE);
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
  for (int gl_id = get_global_id(0); gl_id < N; gl_id += get_global_size(0)) {
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < M/4; i += 1) {
      float4 v = mult4((float4)(A[gl_id + 4*i*N], A[gl_id + 4*i*N + N], A[gl_id + 4*i*N + 2*N], A[gl_id + 4*i*N + 3*N]), ((const global float4*)stage0)[i]);
      acc = add4(acc, v);
    }
    float acc_2 = 0.0f;
    for (int i_2 = 0; i_2 < 4; i_2 += 1) {
      acc_2 = add(acc_2, ((private float*)&acc)[i_2]);
    }
    out[gl_id] = acc_2;
  }
}
