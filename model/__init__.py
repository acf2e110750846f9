"""hostlink.model: how fast a GPU reads host memory over PCIe, and why.

Submodules, each with one job:
- ``units``: unit constants and the one place unit strings are parsed.
- ``config``: TOML presets into frozen dataclasses, overrides, validation.
- ``pcie``: specification tables and the TLP packetiser.
- ``dram``: host DRAM bandwidth with its burst size.
- ``analytic``: closed-form bounds (link, tags, credits, DRAM, requester).
- ``workload``: the request stream every timing model consumes.
- ``page_advice``: NumPy's large arrays on ordinary pages (set on import).
"""
from hostlink.model.page_advice import apply_default as _apply_page_advice

_apply_page_advice()
