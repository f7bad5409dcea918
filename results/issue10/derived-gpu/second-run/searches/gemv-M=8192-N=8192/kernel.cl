float4 mult4(float4 x, float4 y) {
  return x * y;
}
float4 add4(float4 x, float4 y) {
  return x + y;
}
float add(float x, float y) {
  return x + y;
}
float mult(float x, float y) {
  return x * y;
}

kernel void KERNEL(
    const global float* restrict A,
    const global float* restrict x,
    const global float* restrict y,
    float alpha,
    float beta,
    global float* out,
    global float* tmp,
    int M,
    int N) {
  local float tmp_2[256] __attribute__((aligned(16)));
  local float buf[128] __attribute__((aligned(16)));
  local float buf_2[128];
  for (int wg_id = get_group_id(0); wg_id < N; wg_id += get_num_groups(0)) {
    int l_id = get_local_id(0);
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < M/256; i += 1) {
      float4 v = mult4(((const global float4*)A)[64*i + l_id + M*wg_id/4], ((const global float4*)x)[64*i + l_id]);
      acc = add4(acc, v);
    }
    ((local float4*)tmp_2)[l_id] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      if (get_local_id(0) < 32) {
        int l_id_2 = get_local_id(0);
        float4 acc_2 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_2 = 0; i_2 < 2; i_2 += 1) {
          acc_2 = add4(acc_2, ((local float4*)tmp_2)[i_2 + 2*l_id_2]);
        }
        ((local float4*)buf)[l_id_2] = acc_2;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    local float* in = buf;
    local float* out_2 = buf_2;
    int size = 32;
    for (int iter = 0; iter < 4; iter += 1) {
      if (get_local_id(0) < size/2) {
        int l_id_3 = get_local_id(0);
        float4 acc_3 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_3 = 0; i_3 < 2; i_3 += 1) {
          acc_3 = add4(acc_3, vload4(i_3 + 2*l_id_3, in));
        }
        vstore4(acc_3, l_id_3, out_2);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      size = size/2;
      { local float* swap = in; in = out_2; out_2 = swap; }
    }
    if (get_local_id(0) == 0) {
      float4 acc_4 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
      for (int i_4 = 0; i_4 < 2; i_4 += 1) {
        acc_4 = add4(acc_4, vload4(i_4, in));
      }
      ((global float4*)tmp)[wg_id] = acc_4;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    float acc_5 = 0.0f;
    for (int i_5 = 0; i_5 < 4; i_5 += 1) {
      acc_5 = add(acc_5, tmp[i_5 + 4*wg_id]);
    }
    if (get_local_id(0) == 0) {
      float v_2 = mult(alpha, acc_5);
      float v_3 = mult(beta, y[wg_id]);
      out[wg_id] = add(v_2, v_3);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
