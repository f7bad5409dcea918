#!/bin/bash
# Run 4 of the SGEMM work (and the template of the next): a 4096³ sweep of new tilings beside the
# shipped one (BASE), the best two confirmed at the three other shapes beside BASE (and the
# shipped 64x64:16:8x8:3 at 1024x1024x8192), the SM clock and power sampled all along
# (clocks.csv, to match with the rows' t0/t1), and (NCU=1) Nsight Compute profiles of BASE, the
# best new variant and cuBLAS: sections (ncu.txt) and every stall reason (ncu_stalls.txt).
# On the device: source .device-kit/setup.sh && OUT=$OUT bash results/issue12/sgemm/run4.sh
# Run 4 used the defaults below; BASE=... NEW=... override them.
set -o pipefail
OUT=${OUT:-results/issue12/sgemm/run4}
NCU=${NCU:-1}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 100 > "$OUT/clocks.csv" 2>&1 &
SMI=$!
BASE=${BASE:-64x128:32:8x8:2}
NEW=${NEW:-64x128:32:8x8:3,64x128:32:4x16:2,64x128:32:4x16:3,128x128:32:4x16:2:lb,128x128:16:4x16:2:lb,128x128:32:4x16:2,128x128:32:8x8:2,128x64:32:8x8:2,64x128:64:8x8:2}
python3 benchmarks/cuda_sgemm.py sweep --shape 4096x4096x4096 --variants $BASE,$NEW --repeat 60 \
    --json "$OUT/sweep4096.json" 2>&1 | tee "$OUT/sweep4096.log"
TOP=$(python3 - "$OUT/sweep4096.json" "$BASE" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if "error" not in r and not r["version"].startswith("cuBLAS")
        and r["version"] != sys.argv[2] and r["ms"] == r["ms"]]
print(",".join(r["version"] for r in sorted(rows, key=lambda r: r["ms"])[:2]))
PY
)
echo "top: $TOP"
PLAN=""
for S in 8192x8192x8192 8192x8192x1024 1024x1024x8192; do
  for V in $BASE 64x64:16:8x8:3 ${TOP//,/ }; do
    if [ "$S" != 1024x1024x8192 ] && [ "$V" = 64x64:16:8x8:3 ]; then continue; fi
    PLAN="$PLAN;$S=$V"
  done
done
python3 benchmarks/cuda_sgemm.py confirm --variant "${PLAN#;}" --repeat 10 \
    --json "$OUT/confirm.json" 2>&1 | tee "$OUT/confirm.log"
BEST=${TOP%%,*}
if [ "$NCU" = 1 ]; then
  timeout 120 ncu --clock-control none -k regex:'KERNEL|gemm' --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section LaunchStats \
      python3 results/issue12/sgemm/profile.py $BASE $BEST > "$OUT/ncu.txt" 2>&1
  echo "ncu rc $?"; grep -E "^  [A-Za-z_]|Duration|SM Frequency|Registers|Achieved Occupancy|Issued Warp|No Eligible|Warp Cycles Per Issued|Stall" "$OUT/ncu.txt" | head -80
  timeout 90 ncu --clock-control none -k regex:'KERNEL|gemm' \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,sm__cycles_elapsed.avg.per_second,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum" \
      python3 results/issue12/sgemm/profile.py $BASE $BEST > "$OUT/ncu_stalls.txt" 2>&1
  echo "ncu stalls rc $?"
fi
kill $SMI
