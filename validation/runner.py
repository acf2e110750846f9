"""``hostlink validate run``: measure a manifest's cases on a CUDA host.

Steps, all under the output directory ``OUT``:
0. check that the host has a CUDA GPU (``nvidia-smi -L`` lists one), before
   anything is built or written; a host without one stops with one line;
1. build gpu_kernels (``make -C gpu_kernels``; log in ``build.log``);
2. record the environment (``environment.json``; a resumed run adds its own
   session to ``metadata.json``) and, where ``cuobjdump`` is on the PATH, the
   global loads each kernel of the programs keeps in flight, read from their
   SASS (``loads_in_flight.json``, :func:`record_loads_in_flight`);
3. generate the manifest's graphs with ``hostlink graph gen`` into
   ``OUT/graphs`` (or ``--graph-dir``), unless their files exist;
4. draw the traversal sources (:func:`~hostlink.validation.manifest.choose_sources`) and
   write the sampled row ids of the gather groups (:mod:`hostlink.validation.gather_ids`);
5. run the jobs: one per ``[[self_trace]]``, one per ``[[micro]]`` group
   (and round: ``experiment.micro_rounds``, rounds after the first named
   ``<job>__round<k>``, their reps numbered on from the round before),
   one per (kernel, graph) of each ``[[traversal]]`` group (all its memory
   modes, variants and id sizes in one program run, which loads the graph
   and computes each CPU reference once), in that order. Each job's JSON lines go to
   ``raw/<job>.jsonl`` (its stderr, if any, to ``logs/<job>.err``); a job whose file
   ends with a ``done`` line is finished and is not run again, so an
   interrupted run resumes where it stopped;
6. parse every raw file into the tidy table (``results.csv``,
   ``results.parquet``) and write ``metadata.json``: run id, manifest,
   sessions, graphs, sources, jobs (command, status, exit code, seconds,
   errors), the parameters of every case, and the cases that are missing.

A job that fails (non-zero exit without a ``done`` line) is recorded and the
run goes on; its partial output is kept as ``raw/<job>.jsonl.failed``, and
the measurements it printed before failing are kept in the results (a
resumed run runs the job again and replaces them).
Results checks that fail inside a finished job (exit status 4) are kept as
``check_pass = 0`` rows. A committed run keeps ``raw/`` packed in one
``raw.tar.xz`` (``hostlink validate pack``); a run resumes and reparses from
either form (:mod:`hostlink.validation.raw_store`).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd

from hostlink.model.errors import ConfigError, HostlinkError
from hostlink.validation import environment, raw_store
from hostlink.validation.gather_ids import gather_ids_path, write_gather_ids
from hostlink.validation.manifest import (
    MICRO_BENCHMARKS,
    Manifest,
    SelfTraceSpec,
    choose_sources,
    load_manifest,
    micro_case_name,
    read_offsets,
    traversal_case_name,
)
from hostlink.validation.results_io import (
    Measurement,
    ProgramOutput,
    make_table,
    read_output,
    rows_from_output,
    write_results,
)

REPO = Path(__file__).resolve().parents[1]
KERNEL_DIR = REPO / "gpu_kernels"
EXIT_CHECK_FAILED = 4


class RunError(HostlinkError):
    """The harness cannot go on (build failed, output directory in use by another manifest, ...)."""


def gpu_listing(timeout_s: float = 20.0) -> str | None:
    """What ``nvidia-smi -L`` lists (one line per GPU), or None where it is missing,
    fails or lists nothing: the NVIDIA driver's own view of the CUDA devices."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        res = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                             timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    listing = res.stdout.strip()
    return listing if res.returncode == 0 and listing.startswith("GPU") else None


def require_gpu() -> None:
    """A RunError unless this host has a CUDA GPU."""
    if gpu_listing() is None:
        raise RunError("no CUDA GPU on this host (nvidia-smi -L lists none): validate run "
                       "measures on a GPU; --dry-run prints its jobs without one")


@dataclass
class Job:
    id: str
    kind: str  # micro | traversal | trace
    argv: list[str]
    expected_cases: list[str]
    case_of: Callable[[Measurement], str | None] = field(repr=False, default=lambda m: None)
    trace_dir: Path | None = None
    rep_offset: int = 0  # added to the program's rep (rounds of a micro group)
    group: str = ""  # jobs of one group run at once (hostlink.validation.placement)


@dataclass
class JobResult:
    id: str
    kind: str
    argv: list[str]
    status: str  # finished | failed | skipped (finished earlier) | planned
    returncode: int | None = None
    wall_s: float | None = None
    measurements: int = 0
    check_failures: int = 0
    errors: list[str] = field(default_factory=list)


_GEN_SCRIPT = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from hostlink.traces.graphs.families import build_graph\n"
    "from hostlink.traces.graphs.writers import write_bel\n"
    "kind, scale, degree, seed, prefix = sys.argv[1:6]\n"
    "params = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}\n"
    "params.update(seed=int(seed), **({'scale': int(scale), 'degree': int(degree)}\n"
    "                                 if int(scale) else {}))\n"
    "csr = build_graph(kind, weighted=True, label=Path(prefix).name, **params)\n"
    "write_bel(csr, prefix)\n"
)


def graph_gen_command(kind: str, scale: int, degree: int, seed: int, prefix: Path,
                      params: dict | None = None) -> list[str]:
    """The command that writes PREFIX.bel.{col,dst,val} for a built graph.

    It calls :func:`hostlink.traces.graphs.families.build_graph` and
    ``write_bel`` (what ``hostlink graph gen`` runs) in a child process that
    imports nothing else, so it works on a GPU host that lacks the other
    command groups' dependencies. ``params``: the family's other parameters
    (grid and road: dims, ids, mean_degree; dataset: name), passed as JSON;
    ``scale`` is 0 for the families without one.
    """
    cmd = [sys.executable, "-c", _GEN_SCRIPT, kind, str(scale), str(degree), str(seed), str(prefix)]
    extra = {k: v for k, v in (params or {}).items() if k not in ("scale", "degree", "seed")}
    return cmd + ([json.dumps(extra, sort_keys=True)] if extra else [])


def graph_files(prefix: Path) -> list[Path]:
    return [Path(f"{prefix}.bel.{ext}") for ext in ("col", "dst", "val")]


def _slug(*parts: object) -> str:
    return "__".join(str(p) for p in parts)


def plan_jobs(m: Manifest, bin_dir: Path, prefixes: dict[str, Path], sources: dict[str, list[int]],
              out_dir: Path) -> list[Job]:
    """Every job of the manifest, in run order: self traces (short), micro groups (round by
    round where the manifest asks for ``micro_rounds``), traversal."""
    jobs: list[Job] = []
    traces: list[Job] = []
    argvs = []
    for g in m.micro:
        argv = [str(bin_dir / g.program)]
        for key, p in MICRO_BENCHMARKS[g.benchmark][1].items():
            flag = f"--{key.replace('_', '-')}"
            if p.naming:
                argv += [flag, ",".join(str(v) for v in g.lists.get(key, (p.default,)))]
            else:
                argv += [flag, str(g.settings[key])]
        if g.benchmark == "gather" and "sampled" in g.lists.get("ids", ()):
            argv += ["--ids-file", str(gather_ids_path(out_dir, len(argvs)))]
        argvs.append(argv)
    for k in range(m.micro_rounds):
        for i, (g, argv) in enumerate(zip(m.micro, argvs)):
            bench = g.benchmark
            jid = _slug("micro", i, bench) if k == 0 else _slug("micro", i, bench, f"round{k}")
            jobs.append(Job(id=jid, kind="micro", argv=list(argv), expected_cases=g.cases(),
                            case_of=lambda meas, b=bench: micro_case_name(b, meas.params),
                            rep_offset=k * int(g.settings["reps"])))
    for gi, t in enumerate(m.traversal):
        for kernel in t.kernels:
            for graph in t.graphs:
                argv = [str(bin_dir / kernel), "--graph", str(prefixes[graph]), "--graph-name", graph,
                        "--variant", ",".join(t.variants), "--memory-mode", ",".join(t.memory_modes),
                        "--id-bytes", ",".join(str(b) for b in t.id_bytes), "--reps", str(t.reps),
                        "--warmup", "1" if t.warmup else "0", "--load-ahead", str(t.load_ahead)]
                if kernel in ("bfs", "sssp"):
                    argv += ["--source", ",".join(str(s) for s in sources[graph][:t.sources])]
                if kernel == "pagerank":
                    argv += ["--iterations", str(t.iterations)]
                expected = [traversal_case_name(kernel, graph, v, mode, b) for mode in t.memory_modes
                            for v in t.variants for b in t.id_bytes]
                jobs.append(Job(id=_slug("trav", gi, kernel, graph), kind="traversal", argv=argv,
                                expected_cases=expected, case_of=_traversal_case))
    for i, s in enumerate(m.self_trace):
        tdir = out_dir / "traces" / _slug(s.kernel, s.graph, s.variant, s.memory_mode, f"{s.id_bytes}B")
        argv = [str(bin_dir / s.kernel), "--graph", str(prefixes[s.graph]), "--graph-name", s.graph,
                "--variant", s.variant, "--memory-mode", s.memory_mode, "--id-bytes", str(s.id_bytes),
                "--self-trace", str(tdir)]
        if s.kernel in ("bfs", "sssp"):
            argv += ["--source", str(sources[s.graph][0])]
        traces.append(Job(id=_slug("trace", i, s.kernel, s.graph, s.variant, s.memory_mode, f"{s.id_bytes}B"),
                          kind="trace", argv=argv, expected_cases=[s.case],
                          case_of=lambda meas, c=s.case: c, trace_dir=tdir))
    return traces + jobs


def _traversal_case(meas: Measurement) -> str:
    p = meas.params
    try:
        return traversal_case_name(meas.benchmark, p["graph"], p["variant"], p["memory_mode"], p["id_bytes"])
    except KeyError as exc:
        raise HostlinkError(f"line {meas.line}: traversal measurement without parameter {exc}") from None


class _Progress:
    """rich's progress bar where rich is installed, plain lines otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.enabled = enabled
        self.bar = None
        if enabled:
            try:
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
                self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                    TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                    transient=False)
                self.bar.start()
                self.task = self.bar.add_task("jobs", total=total)
            except ImportError:
                self.bar = None

    def step(self, job: Job, status: str, wall_s: float | None) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"{job.id} [{status}]")
        elif self.enabled:
            t = f" {wall_s:.1f} s" if wall_s is not None else ""
            print(f"hostlink validate: {job.id}: {status}{t}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _finished(out: Path, name: str) -> bool:
    """Whether the run folder ``out`` holds ``raw/<name>`` (loose or packed) of a
    program that finished."""
    if not raw_store.has_raw(out, name):
        return False
    try:
        return raw_store.read_raw_output(out, name).finished
    except HostlinkError:
        return False


def run_job(job: Job, raw_dir: Path, log_dir: Path, timeout_s: float | None) -> JobResult:
    out = raw_dir / f"{job.id}.jsonl"
    part = raw_dir / f"{job.id}.jsonl.part"
    err = log_dir / f"{job.id}.err"
    if job.trace_dir is not None:
        job.trace_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rc = None
    errors = []
    try:
        with part.open("w") as fo, err.open("w") as fe:
            p = subprocess.run(job.argv, stdout=fo, stderr=fe, timeout=timeout_s, cwd=str(REPO))
            rc = p.returncode
    except subprocess.TimeoutExpired:
        errors.append(f"timed out after {timeout_s} s")
    except OSError as exc:
        errors.append(f"could not start {job.argv[0]}: {exc}")
    wall = time.monotonic() - t0
    parsed: ProgramOutput | None = None
    try:
        parsed = read_output(part)
    except HostlinkError as exc:
        errors.append(str(exc))
    if parsed is not None:
        errors += [e.get("message", "") for e in parsed.errors]
    ok = parsed is not None and parsed.finished and rc in (0, EXIT_CHECK_FAILED)
    if ok:
        part.replace(out)
    else:
        part.replace(raw_dir / f"{job.id}.jsonl.failed")
        if rc is not None and rc not in (0, EXIT_CHECK_FAILED):
            # the program's own error line says why; otherwise the last line of its stderr
            tail = err.read_text().strip().splitlines()[-1:] if err.exists() and not errors else []
            errors.append(f"exit status {rc}" + (f": {tail[0]}" if tail else ""))
    if err.exists() and err.stat().st_size == 0:
        err.unlink()  # a program that printed nothing on stderr leaves no empty log
    fails = int(parsed.done.get("check_failures", 0)) if parsed is not None and parsed.done else 0
    return JobResult(id=job.id, kind=job.kind, argv=job.argv, status="finished" if ok else "failed", returncode=rc,
                     wall_s=round(wall, 3), measurements=len(parsed.measurements) if parsed else 0,
                     check_failures=fails, errors=errors)


def build_kernels(out_dir: Path, arch: str | None) -> None:
    if shutil.which("make") is None or shutil.which("nvcc") is None:
        raise RunError("building gpu_kernels needs make and nvcc on the PATH (or pass --no-build with a built bin/)")
    cmd = ["make", "-C", str(KERNEL_DIR), f"-j{os.cpu_count() or 2}"]
    if arch:
        cmd.append(f"ARCH={arch}")
    log = out_dir / "build.log"
    with log.open("w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        tail = log.read_text().strip().splitlines()[-3:]
        raise RunError(f"building gpu_kernels failed (see {log}): " + " | ".join(tail))


LOADS_IN_FLIGHT = "loads_in_flight.json"
#: how long one cuobjdump -sass may take (the largest program dumps in a few seconds)
CUOBJDUMP_TIMEOUT_S = 300


def record_loads_in_flight(out_dir: Path, programs: list[Path]) -> Path | None:
    """Write ``OUT/loads_in_flight.json``: per program, per kernel (mangled name), the
    most global loads one thread keeps in flight in its loops, read from
    ``cuobjdump -sass`` (:mod:`hostlink.validation.sass`); what the GPU ran, where the
    twins otherwise take the source's ``unroll`` or ``load_ahead``. A program
    without device code has no kernels; one cuobjdump cannot read gets its error.
    Nothing is written, and None returned, without cuobjdump on the PATH."""
    from hostlink.validation import sass

    tool = shutil.which("cuobjdump")
    if tool is None:
        return None
    record: dict[str, dict] = {}
    for prog in sorted(set(programs), key=lambda p: p.name):
        try:
            dump = subprocess.run([tool, "-sass", str(prog)], capture_output=True, text=True,
                                  timeout=CUOBJDUMP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            record[prog.name] = {"error": str(exc)}
            continue
        if dump.returncode != 0:
            last = (dump.stderr.strip().splitlines() or [f"exit status {dump.returncode}"])[-1]
            record[prog.name] = {"error": last}
            continue
        if "Function :" not in dump.stdout:      # no device code (memcpy_bw: copies only)
            record[prog.name] = {"kernels": {}}
            continue
        try:
            record[prog.name] = {"kernels": sass.kernels_in_flight(
                sass.parse_sass(dump.stdout, str(prog)))}
        except HostlinkError as exc:
            record[prog.name] = {"error": str(exc)}
    path = out_dir / LOADS_IN_FLIGHT
    path.write_text(json.dumps({"tool": "cuobjdump -sass", "wait_model": sass.WAIT_MODEL,
                                "programs": record}, indent=1) + "\n")
    return path


def ensure_graphs(m: Manifest, graph_dir: Path, log_dir: Path, dry_run: bool) -> tuple[dict, dict]:
    """Prefix of each graph the manifest uses; generates missing ones. Returns (prefixes, info)."""
    prefixes, info = {}, {}
    for name in m.graphs_used():
        spec = m.graphs[name]
        prefix = spec.prefix(graph_dir)
        prefixes[name] = prefix
        entry = {"kind": spec.kind, "prefix": str(prefix)}
        if spec.kind != "file":
            entry.update(spec.params())
        have = all(p.exists() for p in graph_files(prefix)[:2])
        if spec.kind == "file" and not have:
            raise ConfigError(f"{m.path}: graph '{name}': {prefix}.bel.col/.bel.dst not found")
        if not have and not dry_run:
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            cmd = graph_gen_command(spec.kind, spec.scale, spec.degree, spec.seed, prefix,
                                    spec.params())
            t0 = time.monotonic()
            with (log_dir / f"graph__{name}.log").open("w") as f:
                p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=str(REPO))
            if p.returncode != 0 or not all(q.exists() for q in graph_files(prefix)[:2]):
                tail = (log_dir / f"graph__{name}.log").read_text().strip().splitlines()[-1:]
                raise RunError(f"generating graph '{name}' failed: {' '.join(cmd)}" + (f": {tail[0]}" if tail else ""))
            entry["generate_s"] = round(time.monotonic() - t0, 3)
        if not dry_run:
            off = read_offsets(prefix)
            entry["vertices"] = int(len(off) - 1)
            entry["edges"] = int(off[-1])
        info[name] = entry
    return prefixes, info


def _sources(m: Manifest, prefixes: dict[str, Path], dry_run: bool) -> dict[str, list[int]]:
    need: dict[str, int] = {}
    for t in m.traversal:
        if any(k in ("bfs", "sssp") for k in t.kernels):
            for g in t.graphs:
                need[g] = max(need.get(g, 0), t.sources)
    for s in m.self_trace:
        need[s.graph] = max(need.get(s.graph, 0), 1)
    out = {}
    for g, n in need.items():
        if dry_run and not graph_files(prefixes[g])[0].exists():
            out[g] = [-1] * n
        else:
            out[g] = choose_sources(read_offsets(prefixes[g]), n, m.seed, g)
    return out


def _case_params(m: Manifest, sources: dict[str, list[int]]) -> dict[str, dict]:
    params = {}
    for c in m.traversal_cases():
        t = m.traversal[c.group]
        p = {"kind": "traversal", "kernel": c.kernel, "graph": c.graph, "variant": c.variant,
             "memory_mode": c.memory_mode, "id_bytes": c.id_bytes, "reps": t.reps, "load_ahead": t.load_ahead}
        if c.kernel in ("bfs", "sssp"):
            p["sources"] = sources.get(c.graph, [])[:t.sources]
        if c.kernel == "pagerank":
            p["iterations"] = t.iterations
        params[c.case] = p
    for g in m.micro:
        for point in g.points():
            params[micro_case_name(g.benchmark, point)] = {"kind": "micro", "benchmark": g.benchmark, **point,
                                                           **g.settings}
    for s in m.self_trace:
        params[s.case] = {"kind": "trace", **asdict(s),
                          "source": sources.get(s.graph, [None])[0] if s.kernel in ("bfs", "sssp") else None}
    return params


def _placed(params: dict, cases: list[str], m: Manifest) -> dict:
    """``params`` with the placed cases' own (hostlink.validation.placement)."""
    if m.placement is None:
        return params
    from hostlink.validation.placement import placed_case_params
    return {**params, **placed_case_params(params, cases)}


def _load_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _run_info(out: Path) -> dict | None:
    """The run's id and experiment: run.json while it runs; a committed run keeps
    them in metadata.json alone (run.json is not committed)."""
    info = _load_json(out / "run.json")
    if info is None:
        meta = _load_json(out / "metadata.json") or {}
        if meta.get("run_id") and meta.get("experiment"):
            info = {"run_id": meta["run_id"], "experiment": meta["experiment"]}
    return info


def run(manifest_path: str | Path, out_dir: str | Path, *, build: bool = True, arch: str | None = None,
        graph_dir: str | Path | None = None, only: str | None = None, dry_run: bool = False,
        progress: bool = True, timeout_s: float | None = None, bin_dir: str | Path | None = None) -> dict:
    """Run (or resume) a manifest; returns the metadata written to OUT/metadata.json.

    ``bin_dir`` replaces gpu_kernels/bin (programs with the same names and
    output, for tests); with it nothing is built.
    """
    m = load_manifest(manifest_path)
    if not dry_run and bin_dir is None:
        require_gpu()
    out = Path(out_dir)
    raw_dir, log_dir = out / "raw", out / "logs"
    for d in (out, raw_dir, log_dir):
        d.mkdir(parents=True, exist_ok=True)
    manifest_text = Path(manifest_path).read_text()
    run_file = out / "run.json"
    run_info = _run_info(out)
    if run_info is not None:
        if run_info.get("experiment") != m.name or (out / "manifest.toml").read_text() != manifest_text:
            raise RunError(f"{out} holds a run of another manifest (experiment "
                           f"'{run_info.get('experiment')}'); choose a new --out")
    else:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_info = {"run_id": f"{m.name}-{stamp}", "experiment": m.name,
                    "manifest": str(Path(manifest_path).resolve())}
        if not dry_run:
            (out / "manifest.toml").write_text(manifest_text)
            run_file.write_text(json.dumps(run_info, indent=1) + "\n")
    run_id = run_info["run_id"]

    if build and not dry_run and bin_dir is None:
        build_kernels(out, arch)
    bin_dir = Path(bin_dir) if bin_dir is not None else KERNEL_DIR / "bin"
    session = {"started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "hostname": os.uname().nodename}
    if not dry_run and not (out / "environment.json").exists():
        env = environment.collect(REPO, bin_dir / "devinfo")
        (out / "environment.json").write_text(json.dumps(env, indent=1) + "\n")

    gdir = Path(graph_dir) if graph_dir else out / "graphs"
    prefixes, graph_info = ensure_graphs(m, gdir, log_dir, dry_run)
    sources = _sources(m, prefixes, dry_run)
    jobs = plan_jobs(m, bin_dir, prefixes, sources, out)
    if m.placement is not None:
        from hostlink.validation.placement import expand_jobs
        jobs = expand_jobs(jobs, m.placement, out / "gates")
    if not dry_run:
        write_gather_ids(m, out)
    if not dry_run and not (out / LOADS_IN_FLIGHT).exists():
        record_loads_in_flight(out, [Path(j.argv[0]) for j in jobs if Path(j.argv[0]).is_file()])
    if only:
        jobs = [j for j in jobs if only in j.id]

    results: list[JobResult] = []
    if dry_run:
        for j in jobs:
            results.append(JobResult(id=j.id, kind=j.kind, argv=j.argv, status="planned"))
            print(" ".join(j.argv))
        return {"run_id": run_id, "jobs": [asdict(r) for r in results]}

    bar = _Progress(len(jobs), progress)
    try:
        for k, j in enumerate(jobs):
            if j.group and k and jobs[k - 1].group == j.group:
                continue  # run with the first of its group
            group = [x for x in jobs[k:] if j.group and x.group == j.group] or [j]
            if all(_finished(out, f"{x.id}.jsonl") for x in group):
                for x in group:
                    results.append(JobResult(id=x.id, kind=x.kind, argv=x.argv, status="skipped"))
                    bar.step(x, "done earlier", None)
                continue
            if j.group:
                from hostlink.validation.placement import run_group
                done = run_group(group, run_job, raw_dir, log_dir, timeout_s)
            else:
                done = [run_job(j, raw_dir, log_dir, timeout_s)]
            for x, r in zip(group, done):
                results.append(r)
                bar.step(x, r.status, r.wall_s)
    finally:
        bar.close()
    meta = collect_results(m, out, jobs, results, run_id, prefixes, graph_info, sources, session)
    return meta


def collect_results(m: Manifest, out: Path, jobs: list[Job], results: list[JobResult], run_id: str,
                    prefixes: dict, graph_info: dict, sources: dict, session: dict) -> dict:
    """Parse every finished raw file into results.csv/.parquet and write metadata.json."""
    tables, device = [], None
    dropped: dict[str, list[str]] = {}
    host_lines: dict[str, list[dict]] = {}  # where each job bound its host buffers
    got_cases: set[str] = set()
    for j in jobs:
        name = f"{j.id}.jsonl"
        if not raw_store.has_raw(out, name):
            name = f"{j.id}.jsonl.failed"
            if not raw_store.has_raw(out, name):
                continue
        parsed = raw_store.read_raw_output(out, name)
        device = device or parsed.device
        if parsed.host:
            host_lines[j.id] = parsed.host
        wanted = set(j.expected_cases)
        df = rows_from_output(parsed, run_id, m.name, lambda meas, j=j: j.case_of(meas))
        if j.rep_offset:
            df["rep"] = df["rep"] + j.rep_offset
        extra = ~df["case"].isin(wanted)
        if extra.any():  # points the manifest did not ask this job for
            dropped[j.id] = sorted(df.loc[extra, "case"].unique())
            df = df[~extra]
        got_cases.update(df["case"].unique())
        tables.append(df)
    table = pd.concat(tables, ignore_index=True) if tables else make_table([])
    write_results(table, out)
    expected = list(dict.fromkeys(c for j in jobs for c in j.expected_cases))
    old = _load_json(out / "metadata.json") or {}
    prior = {r["id"]: r for r in old.get("jobs", [])}
    job_rows = []
    for r in results:
        row = asdict(r)
        if r.status == "skipped" and r.id in prior:
            row = {**prior[r.id], "status": prior[r.id].get("status", "finished")}
        job_rows.append(row)
    meta = {
        "run_id": run_id,
        "experiment": m.name,
        "description": m.description,
        "manifest": "manifest.toml",
        "sessions": old.get("sessions", []) + [session],
        "device": device,
        "graphs": graph_info,
        "sources": sources,
        "jobs": job_rows,
        # what a case ran with, as recorded when it ran: a reparse keeps it (a default
        # added later, e.g. load_ahead 4, was not what an earlier run's programs used)
        "cases": {**_placed(_case_params(m, sources), expected, m), **(old.get("cases") or {})},
        "missing_cases": [c for c in expected if c not in got_cases],
        "dropped_cases": dropped,
        **({"host_placement": host_lines} if host_lines else {}),
        "check_failures": int(sum(r.get("check_failures", 0) or 0 for r in job_rows)),
        "rows": int(len(table)),
    }
    (out / "metadata.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    return meta


def _sources_from_raw(out: Path) -> dict[str, list[int]]:
    """Each graph's sources in the order the raw traversal outputs used them (longest list seen)."""
    found: dict[str, list[int]] = {}
    for _, output in raw_store.iter_raw_outputs(out):
        seen: dict[str, list[int]] = {}
        for meas in output.measurements:
            g, s = meas.params.get("graph"), meas.params.get("source")
            if g is not None and s is not None and s not in seen.setdefault(g, []):
                seen[g].append(int(s))
        for g, lst in seen.items():
            if len(lst) > len(found.get(g, [])):
                found[g] = lst
    return found


def reparse(out_dir: str | Path) -> dict:
    """Rebuild results and metadata of a run directory from its raw files (no GPU needed).

    The sources come from the old metadata, else from the graph files, else
    from the raw outputs themselves.
    """
    out = Path(out_dir)
    m = load_manifest(out / "manifest.toml")
    run_info = _run_info(out)
    if run_info is None:
        raise RunError(f"{out}: neither run.json nor a metadata.json with a run id; not a run directory")
    old = _load_json(out / "metadata.json") or {}
    gdir = out / "graphs"
    prefixes = {g: m.graphs[g].prefix(gdir) for g in m.graphs_used()}
    sources = dict(old.get("sources") or {})
    from_raw = _sources_from_raw(out)
    for g, prefix in prefixes.items():
        if g not in sources and g in from_raw:
            sources[g] = from_raw[g]
    graph_info = dict(old.get("graphs") or {})
    for g, prefix in prefixes.items():
        if g not in graph_info and graph_files(prefix)[0].exists():
            off = read_offsets(prefix)
            graph_info[g] = {"prefix": str(prefix), "vertices": int(len(off) - 1), "edges": int(off[-1])}
    jobs = plan_jobs(m, KERNEL_DIR / "bin", prefixes, {g: sources.get(g, [-1]) for g in prefixes}, out)
    results = []
    for j in jobs:
        status = ("finished" if _finished(out, f"{j.id}.jsonl") else
                  "failed" if raw_store.has_raw(out, f"{j.id}.jsonl.failed") else "not run")
        prior = {r["id"]: r for r in old.get("jobs", [])}.get(j.id, {})
        results.append(JobResult(id=j.id, kind=j.kind, argv=j.argv, status=status,
                                 returncode=prior.get("returncode"), wall_s=prior.get("wall_s"),
                                 measurements=prior.get("measurements", 0),
                                 check_failures=prior.get("check_failures", 0), errors=prior.get("errors", [])))
    meta = collect_results(m, out, jobs, results, run_info["run_id"], prefixes, graph_info, sources,
                           {"reparsed_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return meta


__all__ = ["Job", "JobResult", "RunError", "run", "reparse", "plan_jobs", "collect_results", "graph_gen_command",
           "SelfTraceSpec"]
