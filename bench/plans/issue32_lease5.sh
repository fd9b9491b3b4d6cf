#!/bin/bash
# The driver of stop 41's GPU lease (issue 32: prompt wordings, the presets on confirm500 and
# mirrors; plans issue32_qwen5.json and issue32_smol5.json). Weights travel in parts (.k1 .. .k11,
# Qwen first: its plan is the longer one); each call names one kit in `carry`.
#   stash K            keep kit K's parts (and wheels, data, the earlier lease's reply cache)
#   launch qwen|smol   join and check the weights, seed the reply cache, start the plan in the background
#   status             the plans' log tails
#   collect WAIT       wait for the plans (at most WAIT s), pack logs, results and caches into $OUT
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/bench HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
mkdir -p /tmp/w /tmp/out
status() { for m in qwen smol; do [ -f /tmp/out/$m/log ] && { echo "== $m"; grep -v "de-quantizing\|Loading weights\|clean_up_tokenization" /tmp/out/$m/log | tail -${1:-6}; }; done; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null || true; }
case $1 in
stash)
  if ls $2/*.whl >/dev/null 2>&1; then python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $2/*.whl; fi
  if [ -d $2/data ]; then cp -r $2/data /tmp/ && gunzip -f /tmp/data/gpu_h200.sqlite.gz; fi
  cp $2/*.part* /tmp/w/; ls /tmp/w | tr '\n' ' '; echo; status ;;
launch)
  if [ $2 = smol ]; then g=/tmp/w/SmolLM2-135M-Instruct.Q4_1.gguf; sum=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53; plan=smol5
  else g=/tmp/w/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf; sum=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32; plan=qwen5; fi
  cat $(ls /tmp/w/$2.part* | sort -V) > $g; echo "$sum  $g" | sha256sum -c || exit 1
  mkdir -p /tmp/out/$2; cp bench/plans/issue32_$plan.json /tmp/out/$2/plan.json
  python3 -c "import sqlite3; s=sqlite3.connect('/tmp/data/gpu_h200.sqlite'); d=sqlite3.connect('/tmp/out/$2/cache.sqlite'); s.backup(d)"
  setsid nohup python3 bench/reader_grid.py /tmp/out/$2/plan.json --gguf $g --data /tmp/data --out /tmp/out/$2 --cache /tmp/out/$2/cache.sqlite --batch ${3:-256} > /tmp/out/$2/log 2>&1 < /dev/null &
  sleep ${4:-5}; status 20 ;;
status) status 14 ;;
collect)
  end=$((SECONDS+$2))
  while [ $SECONDS -lt $end ]; do done=1; for m in qwen smol; do [ -d /tmp/out/$m ] && [ ! -f /tmp/out/$m/DONE ] && done=0; done; [ $done = 1 ] && break; sleep 5; done
  status 60
  for m in qwen smol; do [ -d /tmp/out/$m ] && python3 -c "import sqlite3; s=sqlite3.connect('/tmp/out/$m/cache.sqlite'); d=sqlite3.connect('/tmp/out/$m/cache.copy.sqlite'); s.backup(d)" && (cd /tmp/out && tar czf $OUT/$m.tgz --exclude 'cache.sqlite*' $m); done
  ls -la $OUT ;;
esac
