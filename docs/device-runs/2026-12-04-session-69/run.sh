#!/bin/bash
# Session 69 device script: CUDA suites, then the issue-29 benchmarks.
D=$PWD/.dev; O=$OUT; export LD_LIBRARY_PATH=$D/lib
ts() { date -u +%H:%M:%S; }
{ date -u; nproc; lscpu | grep -E 'Model name|Core|Socket|L2|L3|NUMA'; free -g; cat /sys/kernel/mm/transparent_hugepage/enabled; uname -r; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv; } > $O/machine.txt 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $D/*.whl > $O/pip.txt 2>&1; export PYTHONPATH=/tmp/site
S=$O/cuda-suites.txt
export BLOBCORE_REQUIRE_CUDA=1
{ echo "### cuda (NVRTC) $(ts)"; timeout 120 $D/bin/cuda 2>&1 | tail -15; echo "rc=${PIPESTATUS[0]}"
  echo "### cuda (PTX) $(ts)"; BLOBCORE_CUDA_NVRTC=0 timeout 120 $D/bin/cuda 2>&1 | tail -15; echo "rc=${PIPESTATUS[0]}"
  echo "### gpu ENGINE=cuda $(ts)"; BLOBCORE_ENGINE=cuda timeout 120 $D/bin/gpu 2>&1 | tail -25; echo "rc=${PIPESTATUS[0]}"
  echo "### c cuda / gpu / dtypes ENGINE=cuda $(ts)"; for t in cuda gpu dtypes; do BLOBCORE_ENGINE=cuda timeout 60 $D/bin/c_$t 2>&1 | tail -3; echo "c_$t rc=${PIPESTATUS[0]}"; done
  echo "### python test_cuda.py test_gpu.py ENGINE=cuda $(ts)"; (cd python && BLOBCORE_ENGINE=cuda timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_gpu.py 2>&1 | tail -25; echo "rc=${PIPESTATUS[0]}")
} > $S 2>&1
B=$O/ops.txt; export BLOBCORE_BENCH_MIB=1024
for t in 16 2 16; do echo "### RAYON_NUM_THREADS=$t $(ts)" >> $B; RAYON_NUM_THREADS=$t timeout 120 $D/bin/ops --bench >> $B 2>&1; echo "### rc=$? $(ts)" >> $B; done
unset BLOBCORE_BENCH_MIB
P=$O/percall.txt
for i in 1 2; do echo "### per-call $i $(ts)" >> $P; timeout 60 python3 bench/python_bench.py --per-call >> $P 2>&1; echo "rc=$?" >> $P; done
X=$O/exchange.txt
INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])"); LD=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"); V=$(python3 -c "import sys; print('%d.%d' % sys.version_info[:2])")
cc -O2 -I$INC bench/dlpack_exchange.c -L$LD -lpython$V -Wl,-rpath,$LD -o /tmp/dx >> $X 2>&1
for i in 1 2; do echo "### exchange $i $(ts)" >> $X; PYTHONPATH=/tmp/site:$(python3 -c "import site; print(site.getsitepackages()[0])") timeout 60 /tmp/dx >> $X 2>&1; echo "rc=$?" >> $X; done
echo "### props ENGINE=cuda $(ts)" >> $S; BLOBCORE_ENGINE=cuda timeout 150 $D/bin/props 2>&1 | tail -8 >> $S; echo "rc=${PIPESTATUS[0]} $(ts)" >> $S
echo done $(ts)
