"""Change a system's link as a PCIe generation changes it, keeping the rest measured.

A what-if on the link starts from a measured system and changes only its link:
either one key (``link.gen=3``) or the whole generation part of a link preset
(``link=pcie/gen4_x16``). The link keys fall in two groups:

- the generation's (:data:`GENERATION_KEYS`): generation, width, the tags the
  tag field allows, flit mode and the per-TLP framing that follows from it.
  A link preset sets these; a change of generation resets the ones not given
  to what the new generation allows or defaults to.
- the platform's (every other key): the round trip and its growth with load,
  MPS, MRRS, RCB, completion buffers and the measured DLLP share belong to the
  root complex, the host and the GPU's PCIe controller. They are kept.

What a change of generation changes with it (PCI Express Base Specification
6.0: the tag field widths and flit mode, as tabulated with their sources in
:mod:`hostlink.model.pcie.spec`):

- tags: 8-bit extended tags allow 256 up to Gen3, 10-bit tags (Gen4 and
  later) 768 usable, 14-bit tags in flit mode 16384. Tags above what the new
  generation allows are clamped to its limit, with a note; tags below it are
  kept (they may be the GPU's own limit).
- flit mode: on for Gen6, off below, unless given.
- framing and DLLP share: in flit mode DLLPs ride in the flits and there is
  no per-TLP framing, so a framing or a DLLP share measured without flits is
  dropped when the link enters flit mode (and the other way round).

Notes go out as :class:`LinkAdjusted` warnings; the command line prints each
distinct one once on stderr.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Mapping

from hostlink.model.config.schema import LinkConfig, max_tags

GENERATION_KEYS = ("gen", "lanes", "tags", "flit_mode", "framing_B")
FLIT_KEYS = ("framing_B", "dllp_overhead")   # meaningful only on one side of flit mode


class LinkAdjusted(UserWarning):
    """A link key the model changed because the generation changed."""


def _flit(values: Mapping[str, Any]) -> bool:
    mode = values.get("flit_mode")
    return values["gen"] >= 6 if mode is None else bool(mode)


def link_fields(link: LinkConfig) -> dict[str, Any]:
    """Every field of a link part as a dict."""
    return {f.name: getattr(link, f.name) for f in dataclasses.fields(link)}


def adapt_link(base: Mapping[str, Any], changed: Mapping[str, Any]) -> tuple[dict, list]:
    """The link fields after ``changed`` is applied to ``base`` (both full or partial
    dicts of :class:`LinkConfig` fields), with what a change of generation
    changes alongside; and the notes on what was clamped, as (key, text) pairs."""
    defaults = link_fields(LinkConfig())
    old = {**defaults, **base}
    out = {**old, **changed}
    notes: list[tuple[str, str]] = []
    if "gen" not in changed and "flit_mode" not in changed:
        return out, notes
    if "flit_mode" not in changed and out["gen"] != old["gen"]:
        out["flit_mode"] = None
    flit = _flit(out)
    if flit != _flit(old):
        for key in FLIT_KEYS:
            if key not in changed and out.get(key) is not None:
                out[key] = None
    limit = max_tags(out["gen"], flit)
    if "tags" not in changed and out["tags"] > limit:
        notes.append(("tags", f"link.tags: {out['tags']} tags are more than PCIe gen "
                     f"{out['gen']}{' (flit mode)' if flit else ''} allows; using {limit}"))
        out["tags"] = limit
    return out, notes


def swap_link(base: Mapping[str, Any], preset: str,
              given: Mapping[str, Any] | None = None) -> tuple[dict, list]:
    """``base`` with the generation keys of the link preset ``preset`` (``gen4_x16``
    or ``pcie/gen4_x16``), then the keys ``given``; the platform keys of ``base``
    stay. Returns the fields and the notes."""
    from hostlink.model.config.loader import load_component
    values, _, _ = load_component("link", preset)
    changed = {k: values[k] for k in GENERATION_KEYS if k in values}
    changed["name"] = values.get("name", preset)
    changed["flit_mode"] = values.get("flit_mode")
    changed["framing_B"] = values.get("framing_B")
    changed.update(given or {})
    return adapt_link(base, changed)


def emit(notes: list[tuple[str, str]]) -> None:
    """Send each note's text as a :class:`LinkAdjusted` warning."""
    for _, text in notes:
        warnings.warn(text, LinkAdjusted, stacklevel=3)
