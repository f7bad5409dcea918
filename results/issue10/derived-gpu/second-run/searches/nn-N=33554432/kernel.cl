float distance_(float2 loc, float lat, float lng) {
  return sqrt((lat - loc.x) * (lat - loc.x) + (lng - loc.y) * (lng - loc.y));
}

kernel void KERNEL(
    const global float* restrict locations,
    float lat,
    float lng,
    global float* out,
    int N) {
  for (int gl_id = get_global_id(0); gl_id < N; gl_id += get_global_size(0)) {
    out[gl_id] = distance_(((const global float2*)locations)[gl_id], lat, lng);
  }
}
