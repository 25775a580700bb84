"""``.zip`` / ``.tar.gz`` / ``.tgz`` / ``.tar`` profiles, extracted safely into a temporary folder.

Members with absolute paths or ``..`` components, links pointing outside the archive, device files,
and archives that would expand past MAX_EXPANDED_BYTES are refused before anything is written (and
the size is enforced again while writing, since a zip header can lie about sizes).
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator, TypeVar

from opprof_advisor.core.errors import AdvisorError, ProfileError
import shutil
import tarfile
import tempfile
import zipfile
import zlib

# shutil, tarfile, tempfile, zipfile and zlib are imported where an archive is extracted: every profile
# read asks is_archive, and those modules cost ~5 ms of a start-up that reads a plain folder.

#: Refuse archives that expand past this many bytes (a zip bomb, or a profile too large to be
#: worth reading from an archive). Override with the ADVISOR_MAX_EXTRACT_BYTES environment variable.
MAX_EXPANDED_BYTES = 8 * 1024 ** 3
#: The name every extraction folder starts with (the rank cache skips folders under one).
EXTRACT_PREFIX = "advisor-archive-"
_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")

T = TypeVar("T")


def is_archive(path: Path) -> bool:
    """True when ``path`` is a file whose name says zip or tar."""
    name = path.name.lower()
    return name.endswith(_SUFFIXES) and path.is_file()


def max_bytes() -> int:
    """The expansion cap in force."""
    value = os.environ.get("ADVISOR_MAX_EXTRACT_BYTES")
    return int(value) if value and value.isdigit() else MAX_EXPANDED_BYTES


@contextmanager
def extracted(path: Path) -> Iterator[Path]:
    """Extract ``path`` into a temporary folder, yield it, and remove it afterwards."""
    try:
        folder = Path(tempfile.mkdtemp(prefix=EXTRACT_PREFIX))
    except OSError as exc:
        raise _cannot_extract(path, exc) from None
    try:
        try:
            if path.name.lower().endswith(".zip"):
                _extract_zip(path, folder)
            else:
                _extract_tar(path, folder)
        except OSError as exc:  # a member that is both a file and a folder, a full temporary folder
            raise _cannot_extract(path, exc) from None
        except (EOFError, zlib.error, tarfile.TarError, zipfile.BadZipFile, ValueError) as exc:
            raise ProfileError(f"damaged archive ({exc})", path=path,
                               hint="the archive is cut or corrupt; create it again") from None
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cannot_extract(archive: Path, exc: OSError) -> ProfileError:
    if exc.errno == errno.ENOSPC:
        return ProfileError("no space left in the temporary folder to extract the archive", path=archive,
                            hint="extract it yourself and point advisor at the folder, or set TMPDIR to a roomier place")
    return ProfileError(f"cannot extract the archive: {exc.strerror or exc} ({Path(exc.filename or '').name or '?'})",
                        path=archive, hint="a member is both a file and a folder, or unsafe; re-create the archive")


def relabel(archive: Path, root: Path, read: Callable[[], T]) -> T:
    """Run ``read`` and report paths inside ``root`` as ``<archive>/<member>`` (errors and results)."""
    prefix = str(root)
    try:
        result = read()
    except AdvisorError as exc:
        if exc.path and exc.path.startswith(prefix):
            exc.path = str(archive) + exc.path[len(prefix):]
        exc.message = exc.message.replace(prefix, str(archive))
        raise
    if hasattr(result, "path"):
        inner = str(result.path)
        result.path = str(archive) + inner[len(prefix):] if inner.startswith(prefix) else str(archive)
        result.notes = [n.replace(prefix, str(archive)) for n in result.notes]
    return result


def _check_name(archive: Path, name: str, is_dir: bool = False) -> PurePosixPath:
    member = PurePosixPath(name.replace("\\", "/"))
    if not member.parts and not (is_dir or name.endswith("/")):  # "." or "": a file that would be the folder itself
        raise ProfileError(f"unsafe member path {name!r} in archive (no file name)", path=archive,
                           hint="re-create the archive with relative paths")
    if member.is_absolute() or ".." in member.parts or (member.parts and ":" in member.parts[0]):
        raise ProfileError(f"unsafe member path {name!r} in archive (absolute or '..')", path=archive,
                           hint="re-create the archive with relative paths")
    return member


def _too_big(archive: Path, limit: int) -> ProfileError:
    size = f"{limit / 1024 ** 2:.0f} MB" if limit >= 1024 ** 2 else f"{limit:,} bytes"
    return ProfileError(f"archive expands past the {size} limit", path=archive,
                        hint="extract it yourself and point advisor at the folder, or raise ADVISOR_MAX_EXTRACT_BYTES")


def _extract_zip(archive: Path, folder: Path) -> None:
    limit = max_bytes()
    try:
        bundle = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ProfileError(f"not a readable zip archive ({exc})", path=archive) from None
    with bundle:
        infos = bundle.infolist()
        for info in infos:
            _check_name(archive, info.filename)
            if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink stored in the zip
                raise ProfileError(f"archive member {info.filename!r} is a symbolic link", path=archive,
                                   hint="re-create the archive without links")
        if sum(info.file_size for info in infos) > limit:
            raise _too_big(archive, limit)
        written = 0
        for info in infos:
            target = folder / _check_name(archive, info.filename)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(info) as source, target.open("wb") as sink:
                written = _copy_capped(source, sink, written, limit, archive)


def _copy_capped(source, sink, written: int, limit: int, archive: Path) -> int:
    while True:
        block = source.read(1024 * 1024)
        if not block:
            return written
        written += len(block)
        if written > limit:
            raise _too_big(archive, limit)
        sink.write(block)


def _extract_tar(archive: Path, folder: Path) -> None:
    limit = max_bytes()
    try:
        bundle = tarfile.open(archive)
    except (tarfile.TarError, OSError) as exc:
        raise ProfileError(f"not a readable tar archive ({exc})", path=archive) from None
    with bundle:
        members = bundle.getmembers()
        total = 0
        for member in members:
            name = _check_name(archive, member.name, member.isdir())  # `tar -C job .` stores the folder as "."
            if member.issym() or member.islnk():
                _check_link(archive, name, member)
            elif not (member.isfile() or member.isdir()):
                raise ProfileError(f"archive member {member.name!r} is a device or special file", path=archive)
            total += member.size if member.isfile() else 0
        if total > limit:
            raise _too_big(archive, limit)
        written = 0
        for member in members:
            target = folder / PurePosixPath(member.name)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.extractfile(member) as source, target.open("wb") as sink:
                    written = _copy_capped(source, sink, written, limit, archive)
            # links were checked to stay inside; they are not needed to read a profile, so skipped


def _check_link(archive: Path, name: PurePosixPath, member: tarfile.TarInfo) -> None:
    link = PurePosixPath(member.linkname)
    resolved = link if member.islnk() else name.parent / link
    if link.is_absolute() or ".." in _normalised(resolved).parts[:1] or _escapes(resolved):
        raise ProfileError(f"archive member {member.name!r} links outside the archive ({member.linkname})",
                           path=archive, hint="re-create the archive without links")


def _normalised(path: PurePosixPath) -> PurePosixPath:
    return PurePosixPath(os.path.normpath(str(path)))


def _escapes(path: PurePosixPath) -> bool:
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return True
    return False
