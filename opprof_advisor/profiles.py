"""Load a profile: an archive is unpacked, the format detected, the files read, the profile built and judged.

This sits above every stage it sequences, so none of them imports its caller: ``readers`` parse one format
each into a ``RawProfile`` (a folder of ranks reads as its rank folders), ``cluster`` maps and reduces the
ranks of a job, ``profile.builder`` derives the facts and ``symptoms`` judges them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from opprof_advisor import symptoms
from opprof_advisor.cluster.job import read_job
from opprof_advisor.cluster.reduce import build_job_profile
from opprof_advisor.core.errors import ProfileError
from opprof_advisor.profile.builder import Kernels
from opprof_advisor.readers import archive, read_raw

if TYPE_CHECKING:
    from opprof_advisor.cluster.executors import ExecutorChoice
    from opprof_advisor.core.models import Profile
    from opprof_advisor.readers.base import Progress, RawProfile


def load_profile(path: str | Path, progress: Progress | None = None, peaks: str | Path | None = None,
                 executor: ExecutorChoice | None = None) -> tuple[RawProfile, Profile]:
    """Read ``path`` (folder, file or archive); return the raw kernels and the normalised Profile.

    ``peaks``: a --peaks YAML file for the roofline (see opprof_advisor/profile/roofline.py). A folder of ranks
    gives a RawProfile without kernels (its ranks are summarised; see opprof_advisor/cluster);
    ``executor`` says where their map runs.
    """
    path = Path(path)
    if archive.is_archive(path):
        with archive.extracted(path) as root:
            raw = archive.relabel(path, root, lambda: read_any(root, progress, executor))
            return raw, build_profile(raw, peaks)  # a job's roofline re-reads a rank
    raw = read_any(path, progress, executor)
    return raw, build_profile(raw, peaks)


def read_any(path: Path, progress: Progress | None = None, executor: ExecutorChoice | None = None) -> RawProfile:
    """The RawProfile of ``path``; a folder of ranks is mapped and reduced into its job's (one rank: itself)."""
    raw = read_raw(path, progress)
    ranks = raw.extra.get("rank_dirs")
    if ranks is None:
        return raw
    if len(ranks) == 1:  # one rank under several names (links): read once, as itself
        return read_raw(ranks[0], progress)
    return read_job(Path(raw.path), ranks, progress, executor)


def build_profile(raw: RawProfile, peaks: str | Path | None = None) -> Profile:
    """Normalise a RawProfile: op-type rows, totals, the step split, device facts, symptoms, notes, roofline.

    ``peaks``: a --peaks YAML file over the profile's own device facts (opprof_advisor/profile/roofline.py).
    A job (a folder of ranks read by ``read_any``) is the reduction of its ranks' summaries.
    """
    if raw.extra.get("job") is not None:
        return build_job_profile(raw, peaks)
    return symptoms.profile_of(Kernels(raw), peaks)


def read_profile(path: str | Path, progress: Progress | None = None,
                 executor: ExecutorChoice | None = None) -> Profile:
    """Read any supported profiler output (folder, file or archive) into the normalised Profile."""
    return load_profile(path, progress, executor=executor)[1]


def read_side(path: Path, role: str):
    """Read one side (``BEFORE`` / ``AFTER``) of a comparison; a failure says which side it was."""
    try:
        return read_profile(path)
    except ProfileError as exc:
        exc.message = f"cannot read the {role} profile: {exc.message}"
        if exc.path is None:
            exc.path = str(path)
        raise
