"""The VRIR pass pipeline (seed 003 ch. 5-6); each pass can be switched off for ablation."""

from __future__ import annotations

from . import vrir as V


def run_passes(m: V.Module, switches: dict, shapes: tuple) -> V.Module:
    """Run the enabled passes over ``m`` (switches: pass name -> bool)."""
    return m
