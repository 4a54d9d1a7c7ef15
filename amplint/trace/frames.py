"""Which Python frames are the user's project, and where in the source a frame is.

A site is the innermost frame of the project: torch's own frames, amplint's,
the standard library's and installed packages' never are, so a `log` inside
`Normal.log_prob` is not reported as the user's line.
"""
from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Dict, List, Optional, Tuple

_AMPLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INSTALLED = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class Place:
    """A frame's position: 1-based line and column, end exclusive, as findings carry them."""

    path: str  # absolute
    line: int
    column: int
    end_line: int
    end_column: int
    name: str  # the function's qualified name, `<module>` at top level

    def to_json(self, base: str) -> dict:
        return {"path": relative(self.path, base), "line": self.line, "column": self.column, "name": self.name}


def relative(path: str, base: str) -> str:
    """`path` relative to `base` when `base` holds it (as `amplint check` spells paths), else as it is."""
    if path.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, base)
    return path


def _library_dirs() -> Tuple[str, ...]:
    dirs = {_AMPLINT_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        dirs.add(os.path.dirname(os.path.realpath(torch.__file__)))
    return tuple(sorted(dirs))


class ProjectFiles:
    """Answers "is this code the project's?" once per file name: a frame walk asks it for every frame."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._libraries = _library_dirs()
        self._answers: Dict[str, bool] = {}
        self._libraries_seen: Dict[str, bool] = {}
        self._positions: Dict[CodeType, List[Tuple[Optional[int], ...]]] = {}

    def holds(self, filename: str) -> bool:
        answer = self._answers.get(filename)
        if answer is None:
            answer = self._answers[filename] = self._decide(filename)
        return answer

    def _decide(self, filename: str) -> bool:
        """Under the project's root, and no library's (a `.venv` inside the project is a library)."""
        return os.path.realpath(filename).startswith(self.root + os.sep) and not self.is_library(filename)

    def is_library(self, filename: str) -> bool:
        """torch's, amplint's, the standard library's or an installed package's: frames a walk passes through.

        Asked for every frame above every recorded call: answered once per file name, as `holds` is."""
        answer = self._libraries_seen.get(filename)
        if answer is None:
            path = os.path.realpath(filename)
            answer = self._libraries_seen[filename] = filename.startswith("<") or any(
                path.startswith(library + os.sep) for library in self._libraries) or any(
                part in _INSTALLED for part in path.split(os.sep))
        return answer

    def place(self, frame: FrameType) -> Place:
        code = frame.f_code
        name = getattr(code, "co_qualname", code.co_name)
        path = os.path.realpath(code.co_filename)
        positions = self._positions.get(code)
        if positions is None and hasattr(code, "co_positions"):
            positions = self._positions[code] = list(code.co_positions())
        if positions:
            index = frame.f_lasti // 2
            if 0 <= index < len(positions):
                line, end_line, column, end_column = positions[index]
                if line is not None and column is not None:
                    return Place(path, line, column + 1, end_line or line,
                                 (end_column if end_column is not None else column) + 1, name)
        return Place(path, frame.f_lineno, 1, frame.f_lineno, 1, name)

    def caller(self, frame: Optional[FrameType]) -> Optional[FrameType]:
        """The first frame at or above `frame` outside the libraries, if it is the project's; else None."""
        while frame is not None and self.is_library(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None or not self.holds(frame.f_code.co_filename):
            return None
        return frame

    def first_project(self, frame: Optional[FrameType]) -> Optional[FrameType]:
        """The innermost project frame at or above `frame`, whatever lies between."""
        while frame is not None and not self.holds(frame.f_code.co_filename):
            frame = frame.f_back
        return frame

    def stack(self, frame: FrameType, stop: Optional[FrameType]) -> List[Place]:
        """Project frames from `stop` (the frame that opened the region) down to `frame`, outermost first."""
        places: List[Place] = []
        current: Optional[FrameType] = frame
        while current is not None:
            if self.holds(current.f_code.co_filename):
                places.append(self.place(current))
            if current is stop:
                break
            current = current.f_back
        places.reverse()
        return places
