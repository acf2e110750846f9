"""``hostlink link``: the analytic bounds of one link configuration for one request size.

Without ``--system`` every link parameter comes from the flags (gen, lanes,
request bytes, tags and RTT are required; the others have the config schema's
defaults), and the DRAM and requester bounds apply only when their flags are
given. With ``--system NAME`` the preset supplies everything and the flags
override it (through the config loader, so its checks apply); ``--set
KEY=VALUE`` overrides any other key of the system, as in ``hostlink predict``.

A request asks for at most 4096 B: the largest Max_Read_Request_Size and the
most a read request's 10-bit Length field (in DW) can name (PCI Express Base
Specification 6.0, §2.2.2 and §7.5.3.4).
"""
from __future__ import annotations

import json
import math

# flag dest -> (system override key, model keyword)
_LINK_FLAGS = {
    **{key: (f"link.{key}", key) for key in (
        "gen", "lanes", "tags", "rtt_ns", "mps_B", "mrrs_B", "rcb_B", "framing_B",
        "dllp_overhead", "cpl_buffer_B", "cpl_buffer_hdrs")},
    "dram_burst_B": ("host.burst_B", "dram_burst_B"),
    "requester_limit": ("gpu.max_outstanding_host_reads", "requester_limit"),
}
_DEFAULTS = {"mps_B": 256, "mrrs_B": 512, "rcb_B": 64, "cpl_buffer_B": 0, "cpl_buffer_hdrs": 0,
             "requester_limit": 0, "dram_burst_B": 64}
_REQUIRED = ("gen", "lanes", "request_B", "tags", "rtt_ns")
MAX_REQUEST_B = 4096   # PCIe Base Spec 6.0 §7.5.3.4: Max_Read_Request_Size of at most 4096 B

JSON_KEYS = ("bw_GBps", "bound", "bw_link_GBps", "bw_link_down_GBps", "bw_link_up_GBps",
             "bw_tags_GBps", "bw_credits_GBps", "bw_requester_GBps", "bw_dram_GBps",
             "raw_GBps", "tlp_capacity_GBps", "wire_efficiency", "wire_efficiency_up",
             "dram_efficiency", "outstanding_limit", "outstanding_to_saturate",
             "up_wire_B_per_read", "down_wire_B_per_read")


def _quantity(key: str):
    """An argparse type: a number, or a number with a unit that fits ``key``."""
    def parse(text: str) -> float:
        import argparse
        from hostlink.model.units import UnitError, parse_quantity
        try:
            return parse_quantity(text, key)
        except UnitError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = key
    return parse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "link", help="analytic read bandwidth bounds of a PCIe link for one request size",
        description="Bounds on GPU zero-copy read bandwidth over PCIe (link each way, tags, "
                    "completion credits, requester, host DRAM), the one that binds, and the "
                    "outstanding reads that saturate the link.")
    p.add_argument("--system", metavar="NAME",
                   help="start from a system preset (flags override it)")
    # one add_argument per flag: they repeat in shape on purpose
    p.add_argument("--gen", type=int, metavar="G", help="PCIe generation 1-6")
    p.add_argument("--lanes", type=int, metavar="L", help="link width: 1, 2, 4, 8 or 16")
    p.add_argument("--request-bytes", dest="request_B", type=int, metavar="N",
                   help="bytes per read request (the GPU's SM requests are 32-128)")
    p.add_argument("--offset-bytes", dest="offset_B", type=int, default=0, metavar="B",
                   help="address of the request modulo 4096 (default 0: aligned)")
    p.add_argument("--tags", type=int, metavar="T", help="outstanding reads the tag field allows")
    p.add_argument("--rtt-ns", dest="rtt_ns", type=_quantity("rtt_ns"), metavar="NS",
                   help="read round trip, ns (or with a unit: '1.5 us')")
    p.add_argument("--mps-bytes", dest="mps_B", type=int, metavar="B",
                   help="max payload size (default 256)")
    p.add_argument("--mrrs-bytes", dest="mrrs_B", type=int, metavar="B",
                   help="max read request size (default 512)")
    p.add_argument("--rcb-bytes", dest="rcb_B", type=int, metavar="B",
                   help="read completion boundary, 64 or 128 (default 64)")
    p.add_argument("--cpl-split", choices=("mps", "rcb"), default="mps",
                   help="completer returns the largest completions (mps, default) or one per "
                        "RCB block (rcb)")
    p.add_argument("--framing-bytes", dest="framing_B", type=float, metavar="B",
                   help="per-TLP framing+sequence+LCRC bytes (default: the generation's)")
    p.add_argument("--dllp-overhead", dest="dllp_overhead", type=float, metavar="FRACTION",
                   help="fraction of link time spent on DLLPs (default: the spec's cadence)")
    p.add_argument("--ecrc", action="store_true", default=None, help="TLPs carry an ECRC digest")
    p.add_argument("--addr32", action="store_true", default=None,
                   help="3DW request headers (32-bit addresses)")
    p.add_argument("--cpl-buffer-bytes", dest="cpl_buffer_B", type=int, metavar="B",
                   help="requester completion buffer, bytes (0 = unlimited)")
    p.add_argument("--cpl-buffer-hdrs", dest="cpl_buffer_hdrs", type=int, metavar="N",
                   help="requester completion header slots (0 = unlimited)")
    p.add_argument("--requester-limit", dest="requester_limit", type=int, metavar="N",
                   help="the GPU's own outstanding host reads (0 = unlimited)")
    p.add_argument("--dram-gbps", dest="dram_GBps", type=_quantity("dram_GBps"), metavar="GBPS",
                   help="host DRAM sustained bandwidth, GB/s (no DRAM bound without it or a "
                        "system)")
    p.add_argument("--dram-burst-bytes", dest="dram_burst_B", type=int, metavar="B",
                   help="bytes per DRAM burst (default 64)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="with --system, override a system key, e.g. --set link.rtt_ns='1.2 us' "
                        "(repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _params(args) -> tuple[dict, dict]:
    """(keyword arguments of analytic.evaluate, a description of the configuration)."""
    from hostlink.model.errors import ConfigError
    from hostlink.model.pcie import spec
    given = {k: getattr(args, k) for k in _LINK_FLAGS if getattr(args, k) is not None}
    if args.system:
        from hostlink.model.analytic import system_params
        from hostlink.model.config import load_any_system, system_with
        overrides = {_LINK_FLAGS[k][0]: v for k, v in given.items()}
        if args.ecrc:
            overrides["link.ecrc"] = True
        if args.addr32:
            overrides["link.addr_64bit"] = False
        # --set first, the dedicated flags on top of it
        system = load_any_system(args.system, args.overrides)
        if overrides:
            system = system_with(system, overrides)
        params = system_params(system)
        request_B = args.request_B if args.request_B is not None else system.gpu.max_request_B
        described = {"system": system.name}
    else:
        if args.overrides:
            raise ConfigError("link: --set overrides a system's keys: give --system NAME too")
        missing = [f"--{k.replace('_B', '-bytes').replace('_ns', '-ns').replace('_', '-')}"
                   for k in _REQUIRED if getattr(args, k) is None]
        if missing:
            raise ConfigError(f"link: give {', '.join(missing)} (or --system NAME)")
        params = {_LINK_FLAGS[k][1]: v for k, v in {**_DEFAULTS, **given}.items()}
        params["addr_64bit"] = not args.addr32
        params["ecrc"] = bool(args.ecrc)
        params["dram_GBps"] = math.inf
        spec.check_choice("link.gen", params["gen"], spec.GEN_CHOICES)
        limit = int(spec.max_tags(params["gen"]))
        if not 1 <= params["tags"] <= limit:
            raise ConfigError(f"link.tags: {params['tags']} is outside 1..{limit}, the tags "
                              f"PCIe gen {params['gen']} allows")
        request_B = args.request_B
        described = {}
    if args.dram_GBps is not None:
        params["dram_GBps"] = args.dram_GBps
    params["cpl_split"] = args.cpl_split
    if not 1 <= request_B <= MAX_REQUEST_B:
        raise ConfigError(f"link.request_B: {request_B} B is outside 1..{MAX_REQUEST_B} B, "
                          "what one PCIe read request may ask for")
    if not 0 <= args.offset_B < 4096:
        raise ConfigError(f"link.offset_B: {args.offset_B} must be in 0..4095")
    described.update({k: v for k, v in params.items() if v is not None})
    described.update(request_B=request_B, offset_B=args.offset_B)
    return params, described


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


def run(args) -> int:
    from hostlink.model.analytic import SizeHistogram, evaluate
    params, described = _params(args)
    hist = SizeHistogram.of(described["request_B"], 1.0, described["offset_B"])
    result = evaluate(hist, **params).item()
    if args.json:
        out = {k: _plain(result[k]) for k in JSON_KEYS}
        out["config"] = {k: _plain(v) for k, v in described.items()}
        print(json.dumps(out, sort_keys=False))
        return 0
    _print_table(result, described)
    return 0


def _fmt_bw(value: float) -> str:
    return "unlimited" if not math.isfinite(value) else f"{value:.2f}"


def _print_table(r: dict, described: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    title = (f"PCIe gen {described['gen']} x{described['lanes']}, "
             f"{described['request_B']} B reads, {described['tags']} tags, "
             f"RTT {described['rtt_ns']:g} ns")
    if "system" in described:
        title = f"{described['system']}: {title}"
    table = Table(title=title, title_justify="left")
    table.add_column("bound")
    table.add_column("GB/s", justify="right")
    table.add_column("")
    rows = [("link_down", "link, completions (host to GPU)", r["bw_link_down_GBps"]),
            ("link_up", "link, read requests (GPU to host)", r["bw_link_up_GBps"]),
            ("tags", "tags (Little's law)", r["bw_tags_GBps"]),
            ("cpl_credits", "completion credits", r["bw_credits_GBps"]),
            ("requester", "GPU outstanding-read limit", r["bw_requester_GBps"]),
            ("dram", "host DRAM", r["bw_dram_GBps"])]
    for key, label, value in rows:
        table.add_row(label, _fmt_bw(value), "binds" if key == r["bound"] else "")
    table.add_row("predicted", f"{r['bw_GBps']:.2f}", r["bound"], style="bold")
    console = Console()
    console.print(table)
    console.print(f"raw link {r['raw_GBps']:.2f} GB/s, after DLLP/SKP "
                  f"{r['tlp_capacity_GBps']:.2f} GB/s; wire efficiency (completions) "
                  f"{r['wire_efficiency']:.1%}; DRAM burst efficiency {r['dram_efficiency']:.1%}")
    # whole reads: a read of several MRRS-sized TLPs needs all its tags at once
    allowed = int(math.floor(r["outstanding_limit"] + 1e-9))
    needed = int(math.ceil(r["outstanding_to_saturate"] - 1e-9))
    console.print(f"outstanding reads: {allowed} allowed, {needed} saturate the link "
                  f"(Little's law: {r['outstanding_to_saturate']:.1f} on average)")
