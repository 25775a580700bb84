"""The roofs of the roofline: a chip's AI Core count, clock, HBM bandwidth and cube rates, each with its source.

``resolve_peaks`` takes the profile's own device facts first (info.json, msOpProf ``Current Freq``/``Rated Freq``,
DB ``AICORE_FREQ``), the exact-SoC table in ``readers/chips.py`` for what the profile lacks, then the user file
``$ADVISOR_HOME/peaks.yaml`` and ``--peaks FILE.yaml`` on top (measured values win; ``load_peaks_file`` refuses a
file with an unknown key or an implausible figure). Cube peak = AI Cores x clock x ops per cycle for each dtype class
not given as a measured figure. A figure nobody states stays unknown: ``profile/roofline.py`` says what to collect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opprof_advisor.core.i18n import M_
from opprof_advisor.core.errors import PeaksError
from opprof_advisor.core.records import Record
from opprof_advisor.readers.chips import CUBE_OPS_PER_CYCLE, CUBE_OPS_SOURCE, soc_spec
from opprof_advisor.core.paths import home_dir
from opprof_advisor.core.plain_yaml import load_file

#: The user's peaks file inside the advisor home folder.
USER_PEAKS_FILE = "peaks.yaml"

_PEAK_KEYS = {"chip", "aic", "aiv", "freq_mhz", "hbm_gbps", "cube_tflops"}


@dataclass
class Peaks(Record):
    """The roofs used for one profile, each with where it came from (``sources``)."""

    chip: str | None = None
    aic: int | None = None
    aiv: int | None = None
    freq_mhz: float | None = None
    hbm_gbps: float | None = None
    l2_mb: float | None = None
    cube_tflops: dict[str, float] = field(default_factory=dict)  # dtype class -> TFLOP/s (TOPS for int8)
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.to_dict().items() if k != "sources" and v not in (None, {})}
        out["cube_tflops"] = {k: round(v, 3) for k, v in self.cube_tflops.items()}
        return out


def load_peaks_file(path: str | Path) -> dict[str, Any]:
    """Read and check a peaks YAML file; raise PeaksError naming the file and the bad key."""
    path = Path(path)
    # without anchors and aliases, from a regular file: a 'billion laughs' file must not hang every profile
    data = load_file(path, PeaksError, hint="see docs/roofline.md for the format")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PeaksError("expected a mapping such as 'aic: 24'", path=path, hint="see docs/roofline.md for the format")
    unknown = sorted(set(map(str, data)) - _PEAK_KEYS)
    if unknown:
        raise PeaksError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_PEAK_KEYS))})", path=path)
    checked: dict[str, Any] = {}
    for key, value in data.items():
        if key == "chip":
            if not isinstance(value, str) or not value.strip():
                raise PeaksError("'chip' must be an exact SoC name such as Ascend910B2", path=path)
            checked[key] = value.strip()
        elif key == "cube_tflops":
            if not isinstance(value, dict):
                raise PeaksError("'cube_tflops' must map a dtype (fp16, bf16, int8, fp32 ...) to TFLOP/s", path=path)
            checked[key] = {str(k).lower(): _positive(v, f"cube_tflops.{k}", path) for k, v in value.items()}
        else:
            number = _positive(value, key, path)
            checked[key] = int(number) if key in ("aic", "aiv") else number
    return checked


#: The plausible range of each figure of a peaks file (cores, MHz, GB/s, TFLOP/s): a value outside is a typo, and a
#: roofline drawn from it would be absurd (1e300 GB/s), so the file is refused naming the key.
PEAK_RANGES = {"aic": (1, 10_000), "aiv": (1, 10_000), "freq_mhz": (1, 100_000), "hbm_gbps": (0.001, 1_000_000),
               "cube_tflops": (0.001, 1_000_000)}


def _positive(value: Any, key: str, path: Path) -> float:
    """A figure of a peaks file, checked finite and in its range (``1e3`` written without a dot is a number too)."""
    low, high = PEAK_RANGES[key.split(".")[0]]
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(value, bool) or not isinstance(number, (int, float)) or not low <= number <= high:  # NaN: False
        raise PeaksError(f"{key!r} must be a positive number ({low:,} to {high:,}), not {value!r}", path=path)
    if key in ("aic", "aiv") and not float(number).is_integer():
        raise PeaksError(f"{key!r} must be a whole number of cores, not {value!r}", path=path)
    return float(number)


def user_peaks_path() -> Path:
    """``$ADVISOR_HOME/peaks.yaml``: measured peaks applied to every profile (documented in README)."""
    return home_dir() / USER_PEAKS_FILE


def resolve_peaks(device: dict[str, Any], peaks_file: str | Path | None = None) -> tuple[Peaks, list[str]]:
    """The roofs for a profile whose device facts are ``device``; and notes on files not applied."""
    layers: list[tuple[str, dict[str, Any]]] = []
    user = user_peaks_path()
    if user.is_file():
        layers.append((f"user peaks {user}", load_peaks_file(user)))
    if peaks_file is not None:
        layers.append((f"--peaks {peaks_file}", load_peaks_file(peaks_file)))
    notes: list[str] = []
    chip = device.get("chip")
    for label, values in layers:
        named = values.get("chip")
        if named and chip and named != chip and not named.startswith(chip):
            notes.append(M_("{label} is for {named}, the profile ran on {chip}: not applied", label=label,
                            named=named, chip=chip))
            values.clear()
        elif named:
            chip = named  # no chip in the profile, or only its family name (Ascend910B -> Ascend910B2)
    peaks = Peaks(chip=chip)
    _fill_from_profile(peaks, device)
    _fill_from_table(peaks)
    for label, values in layers:
        for key, value in values.items():
            if key == "cube_tflops":
                peaks.cube_tflops.update(value)
                peaks.sources.update({f"cube_tflops.{k}": label for k in value})
            elif key != "chip":
                setattr(peaks, key, value)
                peaks.sources[key] = label
    _derive_cube_peaks(peaks)
    return peaks, notes


def _fill_from_profile(peaks: Peaks, device: dict[str, Any]) -> None:
    for key in ("aic", "aiv", "freq_mhz"):
        if device.get(key):
            setattr(peaks, key, device[key])
            peaks.sources[key] = "profile"
    if peaks.chip and device.get("chip") == peaks.chip:
        peaks.sources["chip"] = "profile"


def _fill_from_table(peaks: Peaks) -> None:
    spec = soc_spec(peaks.chip)
    if spec is None:
        return
    for key, source_key in (("aic", "cores"), ("aiv", "cores"), ("freq_mhz", "freq_mhz"), ("hbm_gbps", "hbm_gbps")):
        value = getattr(spec, key)
        if getattr(peaks, key) is None and value is not None:
            setattr(peaks, key, value)
            peaks.sources[key] = f"SoC table {spec.name}: {spec.sources.get(source_key, '')}"
    peaks.l2_mb = spec.l2_mb


def _derive_cube_peaks(peaks: Peaks) -> None:
    """cores x clock x ops per cycle for each dtype class not given as a measured figure."""
    if not (peaks.aic and peaks.freq_mhz):
        return
    for dtype, ops in CUBE_OPS_PER_CYCLE.items():
        if dtype not in peaks.cube_tflops:
            peaks.cube_tflops[dtype] = peaks.aic * peaks.freq_mhz * 1e6 * ops / 1e12
            peaks.sources[f"cube_tflops.{dtype}"] = f"aic x freq_mhz x {ops} ({CUBE_OPS_SOURCE})"
