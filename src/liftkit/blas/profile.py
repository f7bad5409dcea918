"""Device profiles (seed 003 §8.3.4): for one device (keyed by its fingerprint), the best
derivations found per operation, element type, layout and size class, with measured rates.

A profile is a self-contained, versioned JSON file that can be copied to other machines with the
same device. Profiles live in a directory (default `~/.cache/liftkit/blas`, or
`$LIFTKIT_BLAS_PROFILES`); the ones shipped with liftkit are read after it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from liftkit.backends.store import user_dir
from liftkit.blas.codelets import EDGE_CODELETS, Kind, Variant, padding_ratio

FORMAT = "liftkit-blas-profile/2"  # 2: the peak-rate micro-benchmarks (`peaks`)
READABLE = ("liftkit-blas-profile/1", FORMAT)  # version 1 loads with no peaks
SHIPPED = Path(__file__).with_name("profiles")
MAX_PADDING = 1.25  # a ranked variant is used only if padding adds at most 25 % to the work


class ProfileError(ValueError):
    """A profile file that cannot be read or does not fit."""


def profile_dir() -> Path:
    return user_dir("LIFTKIT_BLAS_PROFILES", "blas")


def file_name(fingerprint: str) -> str:
    return "profile-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:16] + ".json"


CLASS_ORDER = ("small", "medium", "large", "huge", "giant")
# GEMMs from this largest size on are `giant`: on the H100 the split tail wins at 4096³ in 5
# parts and at 8192³ in 4 (results/issue12/sgemm22), one class for both ran 4096 at 0.94x
# cuBLAS per call instead of 0.95x (results/issue15/sgemm23)
GIANT_MM = 6144


def size_class(op: str, sizes: Mapping[str, int]) -> str:
    """small / medium / large / huge by the operation's work (the profile's granularity; huge
    separates GEMMs that fill a GPU many times over, n > 2048, from n ≈ 1024; GEMMs also
    giant, n ≥ GIANT_MM, whose tile grids end in other partial waves than n ≈ 4096's). A
    profile without giant entries serves those sizes from huge (`Profile.choose`)."""
    if op == "mm":
        n = max(sizes.values())
        return "small" if n <= 128 else "medium" if n <= 768 else "large" if n <= 2048 \
            else "huge" if n < GIANT_MM else "giant"
    work = 1
    for v in sizes.values():
        work *= v
    return ("small" if work <= 1 << 14 else "medium" if work <= 1 << 20 else
            "large" if work <= 1 << 24 else "huge")


@dataclass(frozen=True)
class Entry:
    """One measured derivation: what it computes, at which size, how fast."""

    kind: Kind
    size_class: str
    sizes: Mapping[str, int]
    variant: Variant
    seconds: float
    rate: float  # GFLOP/s (GB/s for transpose)
    unit: str = "GFLOP/s"
    # "real": the variant is the real kernel of the kind's complex-through-real plan (codelet
    # `real`: one real GEMM of M×2N×2K), measured as that whole plan at the complex sizes; the
    # plan looks these up before the real dtype's own entries (gemm.real_choice)
    via: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"op": self.kind.op, "dtype": self.kind.dtype, "layout": self.kind.layout,
                "size_class": self.size_class, "sizes": dict(self.sizes),
                "variant": self.variant.to_json(), "seconds": self.seconds, "rate": self.rate,
                "unit": self.unit, **({"via": self.via} if self.via else {})}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Entry":
        return Entry(Kind(d["op"], d["dtype"], d.get("layout", "-")), d["size_class"],
                     {k: int(v) for k, v in d["sizes"].items()}, Variant.from_json(d["variant"]),
                     float(d["seconds"]), float(d["rate"]), d.get("unit", "GFLOP/s"),
                     str(d.get("via", "")))


@dataclass(frozen=True)
class Peaks:
    """The device's measured peak rates (liftkit.blas.peak): GFLOP/s per dtype for `add`,
    `mul`, `mad` (separate multiply and add) and `fma`, and the copy bandwidth in GB/s."""

    flops: Mapping[str, Mapping[str, float]]
    copy: float

    def fma(self, dtype: str) -> Optional[bool]:
        """Whether fused multiply-adds beat separate ones by 5 % (None: not measured)."""
        r = self.flops.get(dtype)
        if not r or "fma" not in r or "mad" not in r:
            return None
        return r["fma"] > 1.05 * r["mad"]

    def to_json(self) -> dict[str, Any]:
        return {"flops": {dt: dict(r) for dt, r in self.flops.items()}, "copy_GBps": self.copy,
                "fma_faster": {dt: self.fma(dt) for dt in self.flops}}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Peaks":
        return Peaks({str(dt): {str(op): float(v) for op, v in r.items()}
                      for dt, r in d["flops"].items()}, float(d["copy_GBps"]))


@dataclass
class Profile:
    """Measured entries for one device. Several entries per (kind, size class) are kept, best
    first: the library uses the best one whose padding stays small for the actual sizes."""

    fingerprint: str
    label: str
    device_type: str
    entries: list[Entry] = field(default_factory=list)
    created: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    peaks: Optional[Peaks] = None

    def ranked(self, kind: Kind, cls: str, via: str = "") -> list[Entry]:
        """The class's measured variants, fastest first (guarded forms apart: `guarded`; with
        `via`, the entries of the kind's plan through that derivation: `Entry.via`)."""
        out = [e for e in self.entries if e.kind == kind and e.size_class == cls
               and e.via == via and e.variant.codelet not in EDGE_CODELETS]
        return sorted(out, key=lambda e: -e.rate)

    def guarded(self, kind: Kind, cls: str, via: str = "") -> list[Entry]:
        """The class's measured guarded forms (`edge-*`, timed at sizes its tiles do not
        divide), fastest first: liftkit.blas ranks them only where the chosen variant's tiles
        do not divide the sizes (gemm.profiled_edge)."""
        out = [e for e in self.entries if e.kind == kind and e.size_class == cls
               and e.via == via and e.variant.codelet in EDGE_CODELETS]
        return sorted(out, key=lambda e: -e.rate)

    def at_sizes(self, kind: Kind, sizes: Mapping[str, int], via: str = "") -> list[Entry]:
        """The entries measured at these very sizes (guarded forms too), fastest first: what
        was timed where a call runs beats what its class's representative size suggests (the
        odd sizes' guarded forms, the complex `real` plan's kernels, the split plan)."""
        want = dict(sizes)
        out = [e for e in self.entries if e.kind == kind and e.via == via and dict(e.sizes) == want]
        return sorted(out, key=lambda e: -e.rate)

    def choose(self, kind: Kind, sizes: Mapping[str, int], multiples_of: Any, via: str = "",
               at: Optional[Mapping[str, int]] = None) -> Optional[Variant]:
        """The fastest measured variant for this size class whose padding is acceptable; a
        class nothing was measured for takes the nearest smaller class's choice (a profile tuned
        without `huge` serves every size above `large`). `via`: the entries of that plan's
        kernel (`Entry.via`), whose padding is judged at `at` (the real product's sizes)."""
        cls = size_class(kind.op, sizes)
        order = CLASS_ORDER[:CLASS_ORDER.index(cls) + 1][::-1]
        for c in order:
            ranked = self.ranked(kind, c, via)
            for e in ranked:
                try:
                    mult = multiples_of(kind, e.variant)
                except ValueError:
                    continue  # a codelet this liftkit does not know (a newer profile)
                if padding_ratio(at if at is not None else sizes, mult) <= MAX_PADDING:
                    return e.variant
            if ranked:
                return None
        return None

    def add(self, entries: Iterable[Entry]) -> None:
        """Add measurements, replacing earlier ones of the same kind, class and variant."""
        new = list(entries)
        keys = {(e.kind, e.size_class, e.variant, e.via) for e in new}
        self.entries = [e for e in self.entries
                        if (e.kind, e.size_class, e.variant, e.via) not in keys] + new

    def measured(self, kind: Kind, cls: str, via: str = "") -> set[Variant]:
        return {e.variant for e in self.entries
                if e.kind == kind and e.size_class == cls and e.via == via}

    # -- JSON -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "device": {"fingerprint": self.fingerprint, "label": self.label,
                                             "type": self.device_type},
                "created": self.created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "notes": self.notes,
                "peaks": self.peaks.to_json() if self.peaks is not None else None,
                "entries": [e.to_json() for e in self.entries]}

    @staticmethod
    def from_json(d: Mapping[str, Any], where: str = "profile") -> "Profile":
        fmt = d.get("format") if isinstance(d, Mapping) else None
        if fmt not in READABLE:
            newer = isinstance(fmt, str) and fmt.startswith("liftkit-blas-profile/")
            raise ProfileError(
                f"{where}: a liftkit BLAS profile of a newer version ({fmt}); this liftkit reads "
                f"{', '.join(READABLE)}" if newer else
                f"{where}: not a liftkit BLAS profile (format {fmt!r}, expected {FORMAT!r})")
        try:
            dev = d["device"]
            peaks = d.get("peaks")
            return Profile(dev["fingerprint"], dev.get("label", ""), dev.get("type", ""),
                           [Entry.from_json(e) for e in d.get("entries", [])],
                           d.get("created", ""), dict(d.get("notes", {})),
                           Peaks.from_json(peaks) if peaks else None)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ProfileError(f"{where}: malformed profile ({type(err).__name__}: {err})") from None

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"

    def save(self, path: Union[str, Path, None] = None) -> Path:
        """Write atomically (a tuning run checkpoints after every kind)."""
        target = Path(path) if path is not None else profile_dir() / file_name(self.fingerprint)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(self.dumps(), encoding="utf-8")
        tmp.replace(target)
        return target

    @staticmethod
    def load(path: Union[str, Path]) -> "Profile":
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as err:
            raise ProfileError(f"cannot read {p}: {err.strerror or err}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ProfileError(f"{p}: not JSON ({err.msg} at line {err.lineno})") from None
        return Profile.from_json(data, str(p))


def find_profile(fingerprint: str, directories: Optional[Iterable[Path]] = None
                 ) -> Optional[Profile]:
    """The profile for a device: the user's directory first, then the shipped ones."""
    for d in directories if directories is not None else (profile_dir(), SHIPPED):
        p = Path(d) / file_name(fingerprint)
        if p.is_file():
            return Profile.load(p)
    return None


def find_profile_any_driver(fingerprint: str, directories: Optional[Iterable[Path]] = None
                            ) -> Optional[Profile]:
    """The profile for this device and driver, else one tuned on the same device (platform and
    name) with another driver version: a shipped profile stays useful after a driver update, and
    its choices are still correct derivations (only possibly no longer the fastest). The caller
    says so once."""
    exact = find_profile(fingerprint, directories)
    if exact is not None:
        return exact
    device = fingerprint.rsplit("|", 1)[0]
    dirs = [Path(d) for d in (directories if directories is not None else (profile_dir(), SHIPPED))]
    for p in (f for d in dirs if d.is_dir() for f in sorted(d.glob("profile-*.json"))):
        try:
            prof = Profile.load(p)
        except ProfileError:  # someone else's broken file: not this device's profile
            continue
        if prof.fingerprint.rsplit("|", 1)[0] == device:
            return prof
    return None
