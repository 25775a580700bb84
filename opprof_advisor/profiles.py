"""Load a profile: an archive is unpacked, the format detected, the files read, the profile built.

This sits above ``readers/`` (which parse one format each into a ``RawProfile``) and
``profile_builder`` (which normalises that into the ``Profile`` every command works on), so
neither of them imports the other's caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from opprof_advisor.core.errors import ProfileError
from opprof_advisor.profile import builder as profile_builder
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
            raw = archive.relabel(path, root, lambda: read_raw(root, progress, executor))
            return raw, profile_builder.build_profile(raw, peaks)  # a job's roofline re-reads a rank
    raw = read_raw(path, progress, executor)
    return raw, profile_builder.build_profile(raw, peaks)


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
