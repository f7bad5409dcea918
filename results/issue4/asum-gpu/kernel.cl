float4 abs4(float4 x) {
  return fabs(x);
}
float4 add4(float4 x, float4 y) {
  return x + y;
}
float4 id_float4(float4 x) {
  return x;
}

kernel void KERNEL_0(
    const global float* restrict x,
    global float* out,
    int N) {
  local float tmp[512];
  local float buf[256];
  local float buf_2[256];
  local float buf_3[8];
  local float buf_4[8];
  for (int wg_id = get_group_id(0); wg_id < N/16384; wg_id += get_num_groups(0)) {
    int l_id = get_local_id(0);
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < 32; i += 1) {
      float4 v = abs4(vload4(128*i + l_id + 4096*wg_id, x));
      acc = add4(acc, v);
    }
    vstore4(acc, l_id, tmp);
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      if (get_local_id(0) < 64) {
        int l_id_2 = get_local_id(0);
        float4 acc_2 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_2 = 0; i_2 < 2; i_2 += 1) {
          acc_2 = add4(acc_2, vload4(i_2 + 2*l_id_2, tmp));
        }
        vstore4(acc_2, l_id_2, buf);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    local float* in = buf;
    local float* out_2 = buf_2;
    int size = 64;
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
    {
      if (get_local_id(0) < 2) {
        int l_id_4 = get_local_id(0);
        float4 acc_4 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_4 = 0; i_4 < 2; i_4 += 1) {
          acc_4 = add4(acc_4, vload4(i_4 + 2*l_id_4, in));
        }
        vstore4(acc_4, l_id_4, buf_3);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    local float* in_2 = buf_3;
    local float* out_3 = buf_4;
    int size_2 = 2;
    for (int iter_2 = 0; iter_2 < 1; iter_2 += 1) {
      if (get_local_id(0) < size_2/2) {
        int l_id_5 = get_local_id(0);
        float4 acc_5 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_5 = 0; i_5 < 2; i_5 += 1) {
          acc_5 = add4(acc_5, vload4(i_5 + 2*l_id_5, in_2));
        }
        vstore4(acc_5, l_id_5, out_3);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      size_2 = size_2/2;
      { local float* swap = in_2; in_2 = out_3; out_3 = swap; }
    }
    if (get_local_id(0) == 0) {
      vstore4(id_float4(vload4(0, in_2)), wg_id, out);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}


float4 add4(float4 x, float4 y) {
  return x + y;
}
float4 id_float4(float4 x) {
  return x;
}

kernel void KERNEL_1(
    const global float* restrict stage0,
    global float* out,
    int N) {
  local float tmp[1024];
  local float buf[512];
  local float buf_2[512];
  if (get_group_id(0) == 0) {
    int l_id = get_local_id(0);
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < N/4194304; i += 1) {
      acc = add4(acc, vload4(256*i + l_id, stage0));
    }
    vstore4(acc, l_id, tmp);
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      if (get_local_id(0) < 128) {
        int l_id_2 = get_local_id(0);
        float4 acc_2 = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i_2 = 0; i_2 < 2; i_2 += 1) {
          acc_2 = add4(acc_2, vload4(i_2 + 2*l_id_2, tmp));
        }
        vstore4(acc_2, l_id_2, buf);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    local float* in = buf;
    local float* out_2 = buf_2;
    int size = 128;
    for (int iter = 0; iter < 7; iter += 1) {
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
      vstore4(id_float4(vload4(0, in)), 0, out);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}


float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_2(
    const global float* restrict stage1,
    global float* out,
    int N) {
  float acc = 0.0f;
  for (int i = 0; i < 4; i += 1) {
    acc = add(acc, stage1[i]);
  }
  out[0] = acc;
}
