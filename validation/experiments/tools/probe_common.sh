# Sourced by the probe scripts of validation/experiments/*/: the steps every
# probe starts and ends with, in one place. After sourcing, the working
# directory is the repository root and OUT names the output folder.
#   probe_start NAME [TARGET...]  work folder W=/tmp/NAME; the GPU's name, driver
#                                 and PCIe link (nvidia-smi) in $W/gpu.txt; the
#                                 gpu_kernels make targets built, the log in
#                                 $W/build.txt (the probe stops if a build fails)
#   probe_pack NAME               $W packed into $OUT/NAME.tar.gz
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
: "${OUT:?OUT must name the output folder}"

probe_start() {
  W=/tmp/$1
  shift
  mkdir -p "$W"
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv > "$W/gpu.txt" 2>&1
  if [ $# -gt 0 ]; then
    ( time make -C gpu_kernels "$@" ) > "$W/build.txt" 2>&1 || { tail -20 "$W/build.txt"; exit 1; }
  fi
}

probe_pack() {
  (cd "$W" && tar czf "$OUT/$1.tar.gz" .)
  ls -l "$OUT"
}
