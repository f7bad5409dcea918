"""Rewrite rules, strategies and derivations (seed 002 §4, seed 004 §4)."""

from liftkit.rewrite.core import (
    Choice,
    Path,
    RewriteError,
    Rule,
    Site,
    SiteCache,
    apply_choice,
    choices_in,
    enumerate_choices,
    eta_expand,
    get,
    normalize,
    passes,
    positions,
    replace_at,
    site_at,
    typed_sites,
)

__all__ = ["Choice", "Path", "RewriteError", "Rule", "Site", "SiteCache", "apply_choice", "choices_in", "enumerate_choices",
           "eta_expand", "get", "normalize", "passes", "positions", "replace_at", "site_at", "typed_sites"]
