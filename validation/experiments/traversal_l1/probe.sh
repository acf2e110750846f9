#!/bin/bash
# Nsight Compute counters of BFS in device memory on three graph families of the
# families experiment (validation/experiments/families/manifest.toml): each launch's
# global-load requests and sectors, the L1's sector hits, the sectors the L1 asks
# of the L2, and the launch's time. Run from the repository root with OUT set,
# after run_manifest.sh made the families' graphs under /tmp/hostlink_run/graphs
# (else they are generated here). Each point is the families run's first source.
set -u
G=/tmp/hostlink_run/graphs
mkdir -p "$G" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/bfs ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
python3 validation/experiments/tools/pregen.py "$G" validation/experiments/families/manifest.toml > $OUT/graphs.jsonl
B=gpu_kernels/bin/bfs
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,smsp__inst_executed.sum,launch__shared_mem_config_size,launch__grid_size,launch__block_size
echo "metrics: $M" > $OUT/metrics.txt
NCU="ncu --clock-control none -k regex:walk --csv --page raw --metrics $M"
{
for point in "dense16 42692 merged_aligned" "dense16 42692 naive" "grid3d 223825 naive" "grid3d 223825 merged_aligned" "rmat20 662202 merged_aligned" "ca_grqc 2833 merged_aligned"; do
  set -- $point
  $B --graph $G/$1 --graph-name $1 --variant $3 --memory-mode device --id-bytes 8 --source $2 --reps 3 --warmup 1 >> $OUT/plain.jsonl
  $NCU $B --graph $G/$1 --graph-name $1 --variant $3 --memory-mode device --id-bytes 8 --source $2 --reps 1 --warmup 0 | sed "s/^/$1,$3,/"
done
} > $OUT/ncu.csv 2>$OUT/ncu.err
tail -3 $OUT/ncu.err
wc -l $OUT/ncu.csv $OUT/plain.jsonl
