for spec in "gesummv 60 M=4096 N=4096" "mm 30 M=256 N=256 K=256" "gemv 30 M=4096 N=4096"; do
  set -- $spec; p=$1; s=$2; shift 2
  echo "== $p old"; OLD=1 ./bench_rate.sh old-$p $p $s "$@"
  echo "== $p new"; ./bench_rate.sh new-$p $p $s "$@"
done
