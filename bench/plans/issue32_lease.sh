#!/bin/bash
# One-off driver of the GPU lease for issue 32's reader grids (bench/reader_grid.py).
# stash DIR: keep DIR's weight parts (and wheels, data); launch smol|qwen: join, check, start in the background;
# status: the jobs' log tails; collect WAIT: wait for the launched jobs (at most WAIT s), pack results into $OUT.
export PYTHONPATH=/tmp/site:$PWD/src HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
mkdir -p /tmp/w /tmp/out
status() { for m in smol qwen smol2 qwen2 smol3 qwen3 smol4; do [ -f /tmp/out/$m/log ] && { echo "== $m"; grep -v "de-quantizing\|Loading weights" /tmp/out/$m/log | tail -${1:-6}; }; done; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null || true; }
case $1 in
stash)
  [ -n "$(ls $2/*.whl 2>/dev/null)" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $2/*.whl
  [ -d $2/data ] && cp -r $2/data /tmp/
  cp $2/*.part* /tmp/w/; ls /tmp/w | tr '\n' ' '; echo; status ;;
launch)
  if [ $2 = smol ]; then g=/tmp/w/SmolLM2-135M-Instruct.Q4_1.gguf; sum=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53; else g=/tmp/w/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf; sum=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32; fi
  cat $(ls /tmp/w/$2.part* | sort -V) > $g; echo "$sum  $g" | sha256sum -c || exit 1
  mkdir -p /tmp/out/$2; cp bench/plans/issue32_$2.json /tmp/out/$2/plan.json
  setsid nohup python3 bench/reader_grid.py /tmp/out/$2/plan.json --gguf $g --data /tmp/data --out /tmp/out/$2 --cache /tmp/out/$2/cache.sqlite --batch ${3:-256} > /tmp/out/$2/log 2>&1 < /dev/null &
  sleep ${4:-20}; status 20 ;;
status) status 12 ;;
collect)
  end=$((SECONDS+$2))
  while [ $SECONDS -lt $end ]; do pgrep -f reader_grid.py >/dev/null || break; done=1; for m in smol qwen smol2 qwen2 smol3 qwen3 smol4; do [ -d /tmp/out/$m ] && [ ! -f /tmp/out/$m/DONE ] && done=0; done; [ $done = 1 ] && break; sleep 5; done
  status 40
  for m in smol qwen smol2 qwen2 smol3 qwen3 smol4; do [ -d /tmp/out/$m ] && python3 -c "import sqlite3,sys; s=sqlite3.connect('/tmp/out/$m/cache.sqlite'); d=sqlite3.connect('/tmp/out/$m/cache.copy.sqlite'); s.backup(d)" && (cd /tmp/out && tar czf $OUT/$m.tgz --exclude 'cache.sqlite*' $m); done
  ls -la $OUT ;;
esac
if [ $1 = launch2 ]; then  # launch2 NAME MODEL: plan gpu/NAME.json, a snapshot of MODEL's cache
  g=$(ls /tmp/w/*.gguf | grep -i ${3:0:4}); mkdir -p /tmp/out/$2; cp bench/plans/issue32_$2.json /tmp/out/$2/plan.json
  python3 -c "import sqlite3; s=sqlite3.connect('/tmp/out/$3/cache.sqlite'); d=sqlite3.connect('/tmp/out/$2/cache.sqlite'); s.backup(d)"
  setsid nohup python3 bench/reader_grid.py /tmp/out/$2/plan.json --gguf $g --data /tmp/data --out /tmp/out/$2 --cache /tmp/out/$2/cache.sqlite > /tmp/out/$2/log 2>&1 < /dev/null &
  echo launched $2 on $g
fi
