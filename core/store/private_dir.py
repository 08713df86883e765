"""Directories only their owner can read: mode 0700, and everything created in them later 0600 (files) or 0700
(directories), whichever process or thread creates it.

LanceDB writes its files from Rust with the process's umask (0644 under the usual 022). Changing the umask would
change it for the whole process and its children: the user's own files (`cortex export -o`, agent exports) and
git's (`.git/index`). A default POSIX ACL on the directory instead masks the mode of what is created inside it,
whatever the umask, and is inherited by new subdirectories: measured with LanceDB 0.40 on ext4, every manifest,
data file, transaction and full-text index file came out 0600 and every directory 0700. Where the file system has
no ACLs, the directory's 0700 alone still keeps other users out (nobody else can traverse it).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from pathlib import Path

_ACL_XATTR = "system.posix_acl_default"
_ACL_VERSION = 2
_OWNER_ONLY = struct.pack("<I", _ACL_VERSION) + b"".join(
    struct.pack("<HHI", tag, perm, 0xFFFFFFFF)
    for tag, perm in ((0x01, 0o7), (0x04, 0o0), (0x20, 0o0))  # ACL_USER_OBJ rwx, ACL_GROUP_OBJ ---, ACL_OTHER ---
)
"""The default ACL `u::rwx,g::---,o::---` in the kernel's xattr layout (posix_acl_xattr.h): a version word, then
(tag, permissions, id) entries."""


def make_private(directory: Path) -> None:
    """Make `directory` (which exists) private from now on. A directory that was not private yet (created by an
    older version, or by hand) has its whole tree tightened once, so files written before keep no group or other
    bits either."""
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode == 0o700 and _has_owner_only_default(directory):
        return
    if owner_made_read_only(directory):
        _close_to_others(directory)
        return
    for path in (directory, *directory.rglob("*")) if mode != 0o700 else (directory,):
        try:
            if path.is_symlink():
                continue
            if path.is_dir():
                os.chmod(path, 0o700)
                _set_owner_only_default(path)
            else:
                os.chmod(path, 0o600)
        except FileNotFoundError:  # removed meanwhile by a compaction in another process
            continue


def owner_made_read_only(directory: Path) -> bool:
    """The owner took the write permission away (`chmod -R a-w .cortex/db`): a wish to keep the database as it
    is. Tightening used to chmod the tree back to 0700/0600, writable again; root, which ignores permissions,
    would then have written into it."""
    return not stat.S_IMODE(directory.stat().st_mode) & stat.S_IWUSR


def _close_to_others(directory: Path) -> None:
    """Group and other bits off the tree, the owner's left as they are (no write given back)."""
    for path in (directory, *directory.rglob("*")):
        try:
            if not path.is_symlink():
                os.chmod(path, stat.S_IMODE(path.stat().st_mode) & 0o700)
        except FileNotFoundError:
            continue


def _has_owner_only_default(directory: Path) -> bool:
    if not hasattr(os, "getxattr"):  # not Linux: no ACLs through the standard library; the 0700 mode protects it
        return True
    try:
        return os.getxattr(directory, _ACL_XATTR) == _OWNER_ONLY
    except OSError as exc:  # none set yet (ENODATA), or no ACLs on this file system (then nothing more to do)
        return exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP)


def _set_owner_only_default(directory: Path) -> None:
    if not hasattr(os, "setxattr"):
        return
    try:
        os.setxattr(directory, _ACL_XATTR, _OWNER_ONLY)
    except OSError:
        pass  # no ACLs here (ENOTSUP) or not ours to change (EPERM): the 0700 directory is what protects it
