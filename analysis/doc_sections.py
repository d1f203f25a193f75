#!/usr/bin/python3
"""Writing text outputs atomically: the table scripts' --table files and the generated sections
of docs/*.md (--update-doc).

Split from style.py (issue 32 item 6), which keeps the figures' look.
"""
import os
import tempfile

from report_io import InputError


def umask_file_mode():
    """The mode a newly created file gets under this process's umask (mkstemp's files are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomic(path, text):
    """Writes a text file via a temporary file in the same directory and a rename."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, umask_file_mode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def replace_section(path, begin, end, text):
    """Replaces what stands between the marker lines `begin` and `end` of a Markdown file
    (the generated section of a doc), atomically; exit-2 input errors name the file."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from e
    if begin not in doc or end not in doc:
        raise InputError(f"{path}: no '{begin}' ... '{end}' section to replace")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    write_text_atomic(path, head + begin + "\n" + text + end + tail)
