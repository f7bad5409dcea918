float2 id2(float2 x) {
  return x;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL(
    const global float* restrict x,
    global float* out,
    int N) {
  local float tmp[130] __attribute__((aligned(8)));
  for (int wg_id = get_group_id(0); wg_id < N/128; wg_id += get_num_groups(0)) {
    if (get_local_id(0) < 65) {
      int l_id = get_local_id(0);
      ((local float2*)tmp)[l_id] = id2((float2)(x[min(N - 1, max(0, 2*l_id + 128*wg_id - 1))], x[min(N - 1, 2*l_id + 128*wg_id)]));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int l_id_2 = get_local_id(0);
    float acc = 0.0f;
    for (int i = 0; i < 3; i += 1) {
      acc = add(acc, tmp[i + l_id_2]);
    }
    float acc_2 = 0.0f;
    acc_2 = add(acc_2, acc);
    float acc_3 = 0.0f;
    acc_3 = add(acc_3, acc_2);
    out[l_id_2 + 128*wg_id] = acc_3;
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
