# Nsight Compute counters of BFS in device memory on graphs of the families and
# first_run experiments (validation/experiments/{families,first_run}/manifest.toml):
# each launch's global-load requests and sectors, the L1's sector hits, the
# sectors the L1 asks of the L2, and the launch's time. Run from the repository
# root with OUT set. The graphs are built as those manifests build them, under
# /tmp/hostlink_run/graphs (kept where they exist). POINTS may name other points,
# "graph source variant" each, ";" between them; each default point is the
# families run's first source.
set -u
G=/tmp/hostlink_run/graphs
mkdir -p "$G" /tmp/ns/hostlink
for d in model traces validation; do ln -sfn "$PWD/$d" "/tmp/ns/hostlink/$d"; done
export PYTHONPATH=/tmp/ns${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > $OUT/gpu.txt 2>&1
( time make -C gpu_kernels bin/bfs ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
POINTS=${POINTS:-"dense16 42692 merged_aligned;dense16 42692 naive;grid3d 223825 naive;grid3d 223825 merged_aligned;rmat20 662202 merged_aligned;ca_grqc 2833 merged_aligned"}
IFS=';' read -ra PTS <<< "$POINTS"
python3 - "$G" ${PTS[@]%% *} > $OUT/graphs.jsonl <<'PY'
import json, sys, time, tomllib
from pathlib import Path
from hostlink.traces.graphs.families import build_graph
from hostlink.traces.graphs.writers import write_bel
specs = {}
for m in ("families", "first_run"):
    doc = tomllib.loads(Path(f"validation/experiments/{m}/manifest.toml").read_text())
    for name, spec in doc["graphs"].items():
        specs.setdefault(name, dict(spec, seed=spec.get("seed", doc["experiment"]["seed"])))
for name in dict.fromkeys(a for a in sys.argv[2:] if a in specs):
    prefix, t0 = Path(sys.argv[1]) / name, time.monotonic()
    if not Path(f"{prefix}.bel.col").exists():
        spec = dict(specs[name])
        write_bel(build_graph(spec.pop("kind"), weighted=True, label=name, **spec), prefix)
    print(json.dumps({"graph": name, "gen_s": round(time.monotonic() - t0, 1)}))
PY
B=gpu_kernels/bin/bfs
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,smsp__inst_executed.sum,launch__shared_mem_config_size,launch__grid_size,launch__block_size
echo "metrics: $M" > $OUT/metrics.txt
NCU="ncu --clock-control none -k regex:walk --csv --page raw --metrics $M"
{
for point in "${PTS[@]}"; do
  set -- $point
  $B --graph $G/$1 --graph-name $1 --variant $3 --memory-mode device --id-bytes 8 --source $2 --reps 3 --warmup 1 >> $OUT/plain.jsonl
  $NCU $B --graph $G/$1 --graph-name $1 --variant $3 --memory-mode device --id-bytes 8 --source $2 --reps 1 --warmup 0 | sed "s/^/$1,$3,/"
done
} > $OUT/ncu.csv 2>$OUT/ncu.err
tail -3 $OUT/ncu.err
wc -l $OUT/ncu.csv $OUT/plain.jsonl
