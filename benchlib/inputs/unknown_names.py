"""What a params file is told about a parameter no notebook takes: the names closest to it
("did you mean batch_size?"), else every allowed name in short lines."""

from __future__ import annotations

import difflib
import textwrap

#: The columns an unknown parameter's message is wrapped to (the ``error: FILE: `` prefix aside).
MESSAGE_COLUMNS = 88


def unknown_parameter(where: str, key: str, allowed: set[str], notebooks: list[str]) -> str:
    """The message for a parameter no listed notebook takes: the names closest to it ("did you
    mean batch_size?"); where none is close, every allowed name, wrapped to short lines."""
    of = " and ".join(notebooks)
    close = difflib.get_close_matches(key, sorted(allowed), n=3, cutoff=0.7)
    if close:
        return f"{where}: unknown parameter of {of}; did you mean {' or '.join(close)}?"
    listed = textwrap.fill(", ".join(sorted(allowed)), MESSAGE_COLUMNS, initial_indent="  ",
                           subsequent_indent="  ", break_on_hyphens=False)
    return f"{where}: unknown parameter of {of}; allowed:\n{listed}"
