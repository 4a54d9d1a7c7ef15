"""The child process of `amplint verify --run-user-code`: limit itself, run the slice, print one JSON line.

Run by sandbox.py as `python -I slicechild.py JOB CPU_SECONDS MEMORY_BYTES FILE_BYTES MEMORY_LIMIT` in an
empty temporary folder, with the environment stripped. Its first act, before it reads the job or imports
anything but `resource`, is to lower its own limits: CPU seconds, memory (`RLIMIT_AS`; `RLIMIT_DATA` on a
GPU, whose driver reserves address space), the size of any file it writes, and no core file. Setting them
here rather than in a `preexec_fn` keeps the parent (which has torch's threads running) from forking into
Python code. Then standard output is kept for the result alone: fd 1 is pointed at the error stream, so
whatever the slice prints cannot be mistaken for the result.

amplint's own folder is on `sys.path` only while `amplint.verify.userrun` loads; the slice's modules are
made from the text in the job (`userrun.load_slice`), never imported from the project's files.
"""
import json
import os
import resource
import signal
import sys


def _limit(cpu: int, memory: int, files: int, memory_limit: str) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(getattr(resource, "RLIMIT_" + memory_limit), (memory, memory))


def _run(job: dict) -> dict:
    top = job["amplint"]
    sys.path.insert(0, top)
    try:
        from amplint.verify import userrun
    finally:
        sys.path.remove(top)
    return userrun.run(job)


def main() -> None:
    job_path, cpu, memory, files, memory_limit = sys.argv[1:6]
    _limit(int(cpu), int(memory), int(files), memory_limit)
    result_fd = os.dup(1)
    os.dup2(2, 1)
    mib = int(memory) // (1 << 20)
    try:
        with open(job_path, encoding="utf-8") as handle:
            job = json.load(handle)
        result = _run(job)
    except SystemExit as exc:
        result = {"unverifiable": f"the slice exited (SystemExit: {exc.code!r}) instead of returning a value"}
    except MemoryError:
        result = {"unverifiable": f"the slice ran out of memory (its limit is {mib} MiB of address space)"}
    except BaseException as exc:  # noqa: B902 - whatever the slice raises is reported, never a traceback
        result = {"unverifiable": f"the slice raised {type(exc).__name__} outside the computation: {exc}"[:300]}
    os.write(result_fd, json.dumps(result).encode("utf-8") + b"\n")
    sys.stdout.flush()
    sys.stderr.flush()
    if os.getpgid(0) == os.getpid():  # the leader of the session sandbox.py started: end it, and all it started
        os.killpg(0, signal.SIGKILL)
    os._exit(0)  # threads the slice started, or atexit handlers it registered, do not keep it alive


if __name__ == "__main__":
    main()
