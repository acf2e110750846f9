"""``hostlink config``: list presets, show a resolved system and its assumptions.

``config show`` marks each value with where it came from: a preset's
provenance, ``set by the user (--set)`` for an override, or ``set in FILE``
for a key that the user's own system file (one outside the preset folders)
sets without a provenance of its own. Only a value that neither the user set
nor a source backs is flagged ``(assumption)``.
"""
from __future__ import annotations

import json


def register(subparsers) -> None:
    p = subparsers.add_parser("config", help="list presets; show a resolved system")
    sub = p.add_subparsers(dest="config_command", metavar="CONFIG_COMMAND")
    ls = sub.add_parser("list", help="list the presets of a kind (system, pcie, host, gpu, uvm, translation)")
    ls.add_argument("kind", nargs="?", default="system")
    ls.set_defaults(func=_list)
    show = sub.add_parser("show", help="print a system, resolved, with its assumptions")
    show.add_argument("system", help="preset name, system preset file or resolved system file")
    show.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="override a key, e.g. --set link.rtt_ns='1.2 us' (repeatable)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--out", help="also write the resolved system as TOML here")
    show.set_defaults(func=_show)
    fz = sub.add_parser("freeze", help="write a calibrated system as a system preset: its "
                                       "parts by name, what differs as overrides")
    fz.add_argument("calibrated", help="calibrated system file (validate calibrate --out)")
    fz.add_argument("--name", required=True, help="the preset's name")
    fz.add_argument("--base", required=True,
                    help="system preset whose part presets the new one names")
    fz.add_argument("--description", required=True, help="which machine this is")
    fz.add_argument("--keep", action="append", default=[], metavar="SECTION.KEY",
                    help="take this key's value and provenance from --base (repeatable)")
    fz.add_argument("--header", default="", help="comment lines for the file's top")
    fz.add_argument("--out", required=True, help="where to write the preset")
    fz.set_defaults(func=_freeze)
    sd = sub.add_parser("seeds", help="write the seeds' systems, moved from a calibrated one "
                                      "by the transfer rules, as system presets")
    sd.add_argument("--from", dest="source", default="h200-pcie5",
                    help="the calibrated system to move (default h200-pcie5)")
    sd.add_argument("--out", required=True, help="folder to write the presets in")
    sd.set_defaults(func=_seeds)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _list(args) -> int:
    from hostlink.model.config import list_presets
    from hostlink.model.errors import ConfigError
    names = list_presets(args.kind)
    if not names:
        raise ConfigError(f"no presets of kind '{args.kind}' "
                          "(kinds: system, pcie, host, gpu, uvm, translation)")
    print("\n".join(names))
    return 0


USER_OVERRIDE = "user override"   # the provenance the config loader gives a --set key


def user_file_keys(spec: str) -> tuple[str, set[str]]:
    """The user's system file named by ``spec`` and the dotted keys it sets with no
    provenance of its own; ("", empty) for a preset, a preset file or a resolved system."""
    from pathlib import Path

    from hostlink.model.config import config_path
    from hostlink.model.config.schema import SECTIONS
    from hostlink.model.textfile import read_toml
    path = Path(spec)
    if path.suffix != ".toml" or not path.is_file():
        return "", set()
    real = path.resolve()
    if any(real.is_relative_to(root.resolve()) for root in config_path()):
        return "", set()
    data = read_toml(path, "config file")[0]  # the loader read and checked it already
    if "resolved_system" in data:
        return "", set()
    given = data.get("provenance", {})
    keys = {f"{section}.{key}" for section in SECTIONS
            if isinstance(data.get(section), dict) for key in data[section]}
    return str(path), keys - set(given)


def _show(args) -> int:
    from hostlink.model.config import load_any_system, system_to_dict, write_resolved
    from hostlink.model.config.fields import field_docs
    from hostlink.model.config.schema import SECTIONS
    system = load_any_system(args.system, args.overrides)
    data = system_to_dict(system)
    if args.out:
        write_resolved(system, args.out)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print(f"{system.name}: {system.description}")
    user_file, user_keys = user_file_keys(args.system)
    for section, cls in SECTIONS.items():
        docs = field_docs(cls)
        print(f"[{section}]")
        for key, value in data[section].items():
            dotted = f"{section}.{key}"
            kind = docs[key].get("provenance", "")
            source = system.provenance.get(dotted) or system.provenance.get(key, "")
            if source == USER_OVERRIDE:
                source = "set by the user (--set)"
            elif dotted in user_keys:
                source = f"set in {user_file}"
            backed = source.startswith(("seed", "measured", "datasheet", "set "))
            flag = "  (assumption)" if kind == "assumption" and not backed else ""
            print(f"  {key} = {value!r}{flag}" + (f"  # {source}" if source else ""))
    if system.topology is not None:
        from hostlink.model.config.topology import topology_lines
        print("\n".join(topology_lines(system)))
    return 0


def _freeze(args) -> int:
    from hostlink.model.config.freeze import write_preset
    out = write_preset(args.calibrated, args.out, name=args.name, description=args.description,
                       base=args.base, header=args.header.replace("\\n", "\n"),
                       keep=tuple(args.keep))
    print(f"wrote {out}")
    return 0


def _seeds(args) -> int:
    from hostlink.model.config.seed_systems import write_seed_presets
    for path in write_seed_presets(args.out, args.source):
        print(f"wrote {path}")
    return 0
