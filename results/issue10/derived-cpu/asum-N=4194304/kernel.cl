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
  for (int i = 0; i < N/32768; i += 1) {
    float8 acc = (float8)(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
    for (int i_2 = 0; i_2 < 4096; i_2 += 1) {
      float8 v = abs8(((const global float8*)x)[4096*i + i_2]);
      acc = add8(acc, v);
    }
    ((global float8*)out)[i] = acc;
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
  for (int i = 0; i < N/32768; i += 1) {
    acc = add8(acc, ((const global float8*)stage0)[i]);
  }
  ((global float8*)out)[0] = acc;
}


float2 add2(float2 x, float2 y) {
  return x + y;
}
float add(float x, float y) {
  return x + y;
}

kernel void KERNEL_2(
    const global float* restrict stage1,
    global float* out,
    int N) {
  for (int i = 0; i < 4; i += 1) {
    float2 acc = (float2)(0.0f, 0.0f);
    acc = add2(acc, ((const global float2*)stage1)[i]);
    float acc_2 = 0.0f;
    for (int i_2 = 0; i_2 < 2; i_2 += 1) {
      acc_2 = add(acc_2, ((private float*)&acc)[i_2]);
    }
    out[i] = acc_2;
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
  for (int i = 0; i < 4; i += 1) {
    acc = add(acc, stage2[i]);
  }
  out[0] = acc;
}
