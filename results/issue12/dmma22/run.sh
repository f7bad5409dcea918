source .device-kit/setup.sh && pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl
# DGEMM through DMMA (issue 12): reduceMmaF64K8Ahead / AheadSpread (mm-tensor-cores ik=8
# ahead=1|2) beside the shipped ik=8 derivation (128x64x16 w4 ×4 lines) and cuBLAS DGEMM (CuPy),
# 4096³ and 8192³, every kernel checked against float64 NumPy first. Writes $OUT/dmma.log and
# $OUT/dmma.json. On the device, from the repository root (carry .device-kit, .device-extra):
#   OUT=DIR bash results/issue12/dmma22/run.sh
set -o pipefail
export PYTHONUNBUFFERED=1 LIFTKIT_CACHE_DIR=/tmp/lk-dmma22
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/dmma.log
timeout ${T_DMMA:-38} python3 results/issue12/dmma22/dmma.py --repeat ${REPEAT:-15} --rounds ${ROUNDS:-2} \
    --json $OUT/dmma.json 2>&1 | tee -a $OUT/dmma.log
echo "dmma rc $?" | tee -a $OUT/dmma.log
