float distance_(float2 loc, float lat, float lng) {
  return sqrt((lat - loc.x) * (lat - loc.x) + (lng - loc.y) * (lng - loc.y));
}

kernel void KERNEL(
    const global float* restrict locations,
    float lat,
    float lng,
    global float* out,
    int N) {
  for (int gl_id = get_global_id(1); gl_id < N/256; gl_id += get_global_size(1)) {
    for (int i = 0; i < 256; i += 1) {
      out[256*gl_id + i] = distance_(((const global float2*)locations)[256*gl_id + i], lat, lng);
    }
  }
}
