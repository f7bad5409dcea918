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
  for (int wg_id = get_group_id(0); wg_id < M; wg_id += get_num_groups(0)) {
    float acc = 0.0f;
    for (int i = 0; i < N; i += 1) {
      float v = mult(A[i + N*wg_id], x[i]);
      acc = add(acc, v);
    }
    out[wg_id] = acc;
  }
}


float2 mult2(float2 x, float2 y) {
  return x * y;
}

kernel void KERNEL_1(
    float alpha,
    const global float* restrict stage0,
    global float* out,
    int M,
    int N) {
  for (int wg_id = get_group_id(1); wg_id < M/2; wg_id += get_num_groups(1)) {
    float2 b = (float2)(alpha);
    ((global float2*)out)[wg_id] = mult2(b, ((const global float2*)stage0)[wg_id]);
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
    float acc = 0.0f;
    for (int i = 0; i < N; i += 1) {
      float v = mult(B[i + N*wg_id], x[i]);
      acc = add(acc, v);
    }
    out[wg_id] = acc;
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
  for (int wg_id = get_group_id(1); wg_id < M; wg_id += get_num_groups(1)) {
    if (get_group_id(0) == 0) {
      out[wg_id] = mult(beta, stage2[wg_id]);
    }
  }
}


float4 add4(float4 x, float4 y) {
  return x + y;
}

kernel void KERNEL_4(
    const global float* restrict stage1,
    const global float* restrict stage3,
    global float* out,
    int M,
    int N) {
  for (int i = 0; i < M/4; i += 1) {
    ((global float4*)out)[i] = add4(((const global float4*)stage1)[i], ((const global float4*)stage3)[i]);
  }
}
