float mult(float x, float y) {
  return x * y;
}
float add(float x, float y) {
  return x + y;
}
float id(float x) {
  return x;
}

kernel void KERNEL_0(
    const global float* restrict A,
    const global float* restrict x,
    global float* out,
    int M,
    int N) {
  local float tmp[128];
  local float buf[64];
  local float buf_2[64];
  for (int wg_id = get_group_id(1); wg_id < M; wg_id += get_num_groups(1)) {
    if (get_group_id(0) == 0) {
      int l_id = get_local_id(0);
      float acc = 0.0f;
      for (int i = 0; i < N/128; i += 1) {
        float v = mult(A[128*i + l_id + N*wg_id], x[128*i + l_id]);
        acc = add(acc, v);
      }
      tmp[l_id] = acc;
      barrier(CLK_LOCAL_MEM_FENCE);
      {
        if (get_local_id(0) < 64) {
          int l_id_2 = get_local_id(0);
          float acc_2 = 0.0f;
          for (int i_2 = 0; i_2 < 2; i_2 += 1) {
            acc_2 = add(acc_2, tmp[i_2 + 2*l_id_2]);
          }
          buf[l_id_2] = acc_2;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      local float* in = buf;
      local float* out_2 = buf_2;
      int size = 64;
      for (int iter = 0; iter < 6; iter += 1) {
        if (get_local_id(0) < size/2) {
          int l_id_3 = get_local_id(0);
          float acc_3 = 0.0f;
          for (int i_3 = 0; i_3 < 2; i_3 += 1) {
            acc_3 = add(acc_3, in[i_3 + 2*l_id_3]);
          }
          out_2[l_id_3] = acc_3;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        size = size/2;
        { local float* swap = in; in = out_2; out_2 = swap; }
      }
      if (get_local_id(0) == 0) {
        out[wg_id] = id(in[0]);
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}


float mult(float x, float y) {
  return x * y;
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
  for (int gl_id = get_global_id(1); gl_id < N; gl_id += get_global_size(1)) {
    float acc = 0.0f;
    for (int i = 0; i < M; i += 1) {
      float v = mult(A[gl_id + i*N], stage0[i]);
      acc = add(acc, v);
    }
    out[gl_id] = acc;
  }
}
