float distance_(float2 loc, float lat, float lng) {
  return sqrt((lat - loc.x) * (lat - loc.x) + (lng - loc.y) * (lng - loc.y));
}

kernel void KERNEL(
    const global float* restrict locations,
    float lat,
    float lng,
    global float* out,
    int N) {
  for (int wg_id = get_group_id(1); wg_id < N/512; wg_id += get_num_groups(1)) {
    for (int i = 0; i < 512; i += 1) {
      out[i + 512*wg_id] = distance_(((const global float2*)locations)[i + 512*wg_id], lat, lng);
    }
  }
}
