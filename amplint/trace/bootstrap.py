"""The traced interpreter's first module: start the recorder, run the user's script, write what it saw.

Run as `python bootstrap.py OUT ROOT script|-m TARGET ARGS...` by `amplint trace`,
with the user's own interpreter, so the script sees its own packages. amplint's
directory is on `sys.path` only while amplint's modules load: a user's module
named like one of amplint's neighbours must win. The output is written in a
`finally`, so a script that raises or exits still leaves its trace, and the
exception then propagates as it would have: the exit code is the script's.
"""
import json
import os
import runpy
import sys


def _load_recorder(here: str):  # type: ignore[no-untyped-def]
    top = os.path.dirname(os.path.dirname(here))
    added = top not in sys.path
    if added:
        sys.path.insert(0, top)
    try:
        from amplint.trace.frames import ProjectFiles
        from amplint.trace.recorder import Recorder
        from amplint.trace.records import report
    finally:
        if added:
            sys.path.remove(top)
    return ProjectFiles, Recorder, report


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # python put this file's directory first; the script's takes its place below
    out, root, target = sys.argv[1], sys.argv[2], sys.argv[3]
    module = target == "-m"
    if module:
        target = sys.argv[4]
        sys.argv = [target] + sys.argv[5:]
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = sys.argv[3:]
        sys.path.insert(0, os.path.dirname(os.path.realpath(target)))
    ProjectFiles, Recorder, report = _load_recorder(here)
    recorder = Recorder(ProjectFiles(root))
    recorder.start()
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    finally:
        recorder.stop()
        tmp = f"{out}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(report(recorder.records(), os.getcwd()), handle, indent=2)
            handle.write("\n")
        os.replace(tmp, out)


if __name__ == "__main__":
    main()
