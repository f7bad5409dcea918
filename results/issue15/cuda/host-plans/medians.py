import glob, statistics, re, sys
def load(pat):
    d = {}
    for f in sorted(glob.glob(pat)):
        for line in open(f):
            if line.startswith("#") or not line.strip(): continue
            m = re.match(r"(\S+)\s+(.+?)\s+(\d+\.\d+)\s*(.*)$", line)
            if not m: continue
            key = (m.group(1), m.group(2).strip())
            d.setdefault(key, []).append((float(m.group(3)), m.group(4)))
    return d
pre = sys.argv[1]
b, a = load(f"results/issue15/cuda/host-plans/{pre}before_*.txt"), load(f"results/issue15/cuda/host-plans/{pre}after_*.txt")
print("| arrays | call | before µs | after µs | ratio | driver/cuda.core work per call, before → after |")
print("| --- | --- | --- | --- | --- | --- |")
for k in b:
    if k not in a: continue
    mb = statistics.median(v for v, _ in b[k]); ma = statistics.median(v for v, _ in a[k])
    print(f"| {k[0]} | {k[1]} | {mb:.1f} | {ma:.1f} | {mb/ma:.2f}x | {b[k][0][1]} → {a[k][-1][1]} |")
