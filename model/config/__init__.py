"""Configuration: TOML presets into frozen, checked dataclasses.

Use :func:`load_system` (preset name or file, plus overrides) and
:func:`write_resolved` to record exactly what a run used.
"""
from hostlink.model.config.loader import (config_path, find_preset, list_presets, load_any_system,
                                          load_component, load_resolved, load_system,
                                          parse_override, system_from_dict, system_to_dict,
                                          system_with, write_resolved)
from hostlink.model.config.schema import (SECTIONS, GpuConfig, HostMemoryConfig, LinkConfig,
                                          SystemConfig, TranslationConfig, UvmConfig, max_tags)

__all__ = [
    "GpuConfig", "HostMemoryConfig", "LinkConfig", "SECTIONS", "SystemConfig", "TranslationConfig",
    "UvmConfig", "config_path", "find_preset", "list_presets", "load_any_system", "load_component",
    "load_resolved", "load_system", "max_tags", "parse_override", "system_from_dict",
    "system_to_dict", "system_with", "write_resolved",
]
