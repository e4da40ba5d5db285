"""The few `os` helpers the hook path needs, on the built-in `posix` module alone.

`import os` costs a hook started without `site` a seventh of its time (os loads
`_collections_abc` for `os.environ`, and `posixpath`), so `emit` calls `posix` directly and
takes the path helpers from here. Each one gives what its `os` namesake gives; where the
shortcut is not available (no /proc, an interpreter without `posix._path_normpath`), it falls
back to `os` itself: slower, never different.
"""

import posix
import sys

_ENCODING = sys.getfilesystemencoding()
_ERRORS = sys.getfilesystemencodeerrors()
_DIRECTORY = 0o040000  # stat.S_IFDIR, without importing stat
_FORMAT = 0o170000  # stat.S_IFMT
_REGULAR = 0o100000  # stat.S_IFREG


def getenv(name: str) -> str | None:
    """os.environ.get(name): from `os` where it is loaded (it keeps its copy current), else
    from posix.environ's bytes, decoded as `os` decodes them."""
    loaded = sys.modules.get("os")
    if loaded is not None:
        found: str | None = loaded.environ.get(name)
        return found
    value = posix.environ.get(name.encode(_ENCODING, _ERRORS))
    return None if value is None else value.decode(_ENCODING, _ERRORS)


def variables_ending(suffix: str) -> list[tuple[str, str]]:
    """(name, value) of each environment variable whose name ends in `suffix`, decoded as
    `getenv` decodes them."""
    loaded = sys.modules.get("os")
    if loaded is not None:
        return [(name, value) for name, value in loaded.environ.items() if name.endswith(suffix)]
    end = suffix.encode(_ENCODING, _ERRORS)
    return [(name.decode(_ENCODING, _ERRORS), value.decode(_ENCODING, _ERRORS))
            for name, value in posix.environ.items() if name.endswith(end)]


def join(*parts: str) -> str:
    """os.path.join, for the parts the hook path joins (a later absolute part restarts)."""
    path = parts[0]
    for part in parts[1:]:
        if part.startswith("/") or not path:
            path = part
        elif path.endswith("/"):
            path += part
        else:
            path += "/" + part
    return path


def dirname(path: str) -> str:
    """os.path.dirname."""
    head = path[: path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def abspath(path: str) -> str:
    """os.path.abspath: made absolute from the current folder, then normalised."""
    if not path.startswith("/"):
        path = join(posix.getcwd(), path)
    normpath = getattr(posix, "_path_normpath", None)  # what posixpath.normpath calls
    if normpath is None:
        import os.path

        return os.path.normpath(path)
    return normpath(path) or "."


def isdir(path: str) -> bool:
    """os.path.isdir: a folder, through any link."""
    try:
        return posix.stat(path).st_mode & _FORMAT == _DIRECTORY
    except (OSError, ValueError):
        return False


def realpath(fd: int, path: str) -> str:
    """os.path.realpath(path), where `fd` is the folder `path` names, open: the kernel's own
    name for it (/proc/self/fd), else os.path.realpath."""
    try:
        found: str = posix.readlink(f"/proc/self/fd/{fd}")
        if found.startswith("/") and not found.endswith(" (deleted)"):
            return found
    except OSError:
        pass
    import os.path

    return os.path.realpath(path)


def home() -> str:
    """os.path.expanduser("~"): $HOME, else the user's entry in the password database."""
    userhome = getenv("HOME")
    if userhome is None:
        try:
            import pwd

            userhome = pwd.getpwuid(posix.getuid()).pw_dir
        except (ImportError, KeyError):
            return "~"
    return userhome.rstrip("/") or "/"


def read_regular(path: str, limit: int) -> bytes | None:
    """All of the regular file at `path` (through the user's own links), None where there is
    none, OSError for anything else. A FIFO, socket or device is refused by its type before any
    read, and the open never waits (O_NONBLOCK; a FIFO's open waits for a writer): a status bar
    or a host's hook that read one would wait for as long as nobody writes into it."""
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY | posix.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        st = posix.fstat(fd)
        if st.st_mode & _FORMAT != _REGULAR:
            raise OSError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise OSError(f"{path} is larger than {limit} bytes")
        chunks = []
        size = 0
        while size <= limit and (chunk := posix.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # (it grew while read)
            raise OSError(f"{path} is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        posix.close(fd)
