"""What the UVM model returns: totals, a per-launch breakdown, and remote requests."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from hostlink.model.workload import RequestStream


# UvmLaunch repeats UvmResult's counters on purpose: the same names, one
# launch's share, so that per-launch rows and totals read alike.
@dataclass(frozen=True)
class UvmLaunch:
    """One kernel launch of a UVM simulation."""
    launch: int                 # launch index, as in RequestStream.launch
    time_s: float               # service_time_s + device_time_s of this launch
    service_time_s: float       # fault batches: base cost, migrations and write-backs
    device_time_s: float        # the launch's requests read from device memory
    faults: float
    faults_unique: float
    faults_duplicate: float
    batches: int
    h2d_B: int
    prefetched_B: int
    d2h_B: int
    evictions: int
    thrashing_events: int
    faults_raised: float = 0.0  # fault entries the warps raised (one per missing page per attempt)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class UvmResult:
    """Totals of a UVM simulation (see the package docstring for the meaning of each)."""
    mode: str                   # "migrate", "read_mostly" or "accessed_by"
    time_s: float
    service_time_s: float
    h2d_time_s: float           # part of service_time_s spent moving pages to the GPU
    d2h_time_s: float           # part of service_time_s spent writing evicted pages back
    device_time_s: float
    faults: float               # fault entries fetched by the driver (unique + duplicate)
    faults_unique: float        # distinct pages per batch, summed over batches
    faults_duplicate: float
    write_upgrades: int         # read_mostly: write faults on read-duplicated pages
    batches: int
    h2d_B: int
    prefetched_B: int
    d2h_B: int
    evictions: int
    thrashing_events: int
    thrashing_chunks: int
    unique_B: int               # distinct bytes the host requests cover
    touched_B: int              # distinct pages touched, in bytes (the working set)
    capacity_B: int
    host_requests: int
    block_services: int = 0     # VA blocks serviced, summed over batches
    migration_runs: int = 0     # contiguous runs of pages migrated (one copy each)
    move_runs: int = 0          # contiguous runs of pages moved off the host (unmapped there)
    driver_time_s: float = 0.0  # part of service_time_s: per-block, per-moved-page and per-moved-run work
    faults_raised: float = 0.0  # fault entries the warps raised (one per missing page per attempt)
    remote: RequestStream | None = field(default=None, repr=False, compare=False)
    per_launch: tuple[UvmLaunch, ...] = field(default=(), repr=False)

    @property
    def read_amplification(self) -> float:
        """Bytes migrated host to device over the distinct bytes the kernel asked for."""
        return self.h2d_B / self.unique_B if self.unique_B else 0.0

    @property
    def duplicate_fraction(self) -> float:
        return self.faults_duplicate / self.faults if self.faults else 0.0

    @property
    def oversubscription(self) -> float:
        """Working set (touched pages) over the GPU memory the managed data may use."""
        return self.touched_B / self.capacity_B if self.capacity_B else 0.0

    @property
    def migration_bw_GBps(self) -> float:
        """Bytes migrated host to device over the service time (0 when nothing moved)."""
        return self.h2d_B / self.service_time_s / 1e9 if self.service_time_s > 0 else 0.0

    def to_dict(self) -> dict:
        """JSON-ready totals, derived ratios and the per-launch rows."""
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("remote", "per_launch")}
        d["read_amplification"] = self.read_amplification
        d["duplicate_fraction"] = self.duplicate_fraction
        d["oversubscription"] = self.oversubscription
        d["migration_bw_GBps"] = self.migration_bw_GBps
        d["remote_requests"] = 0 if self.remote is None else len(self.remote)
        d["per_launch"] = [row.to_dict() for row in self.per_launch]
        return d
